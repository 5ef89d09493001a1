/** Why a turn ends `incomplete` (`incomplete_details.reason`). */
export type IncompleteReason = 'max_output_tokens' | 'content_filter' | 'max_tool_calls' | 'max_tool_rounds';

/** What the loop does after a round (architecture.md §3). */
export type RoundDecision = { next: 'continue' } | { next: 'done' } | { next: 'requires_client_action' } | { next: 'incomplete'; reason: IncompleteReason };

/** What a round ended with, as far as the loop's decision goes. */
export interface RoundFacts {
  /** The model's output was cut short (its calls were not run). */
  cutShort?: 'max_output_tokens' | 'content_filter';
  /** Calls the client must answer: its own tools' calls, or approvals it must give. */
  hasClientCalls: boolean;
  /** Gateway calls run this round: their results feed the next round. */
  gatewayResults: number;
  /** `max_tool_calls` left some of this round's gateway calls unrun. */
  toolCallsCapped?: boolean;
  round: number;
  maxRounds: number;
}

/**
 * A cut-short output ends the turn `incomplete`. Client-owned calls take precedence: gateway
 * calls of a mixed round have already run and been recorded, and the response returns with the
 * client's calls. Otherwise gateway results feed the next round until a cap (`max_tool_calls`,
 * the round cap), which ends the turn `incomplete` (never an HTTP error).
 */
export function classifyRound(facts: RoundFacts): RoundDecision {
  if (facts.cutShort) return { next: 'incomplete', reason: facts.cutShort };
  if (facts.hasClientCalls) return { next: 'requires_client_action' };
  if (facts.toolCallsCapped) return { next: 'incomplete', reason: 'max_tool_calls' };
  if (facts.gatewayResults === 0) return { next: 'done' };
  if (facts.round + 1 >= facts.maxRounds) return { next: 'incomplete', reason: 'max_tool_rounds' };
  return { next: 'continue' };
}
