/** What the loop does after a round (architecture.md §3). */
export type RoundDecision = 'continue' | 'done' | 'requires_client_action' | 'incomplete';

/**
 * Client-owned calls take precedence: gateway calls of a mixed round have already run and been
 * recorded, and the response returns with the client's calls. Otherwise gateway results feed the
 * next round until the round cap, which ends the turn `incomplete` (never an HTTP error).
 */
export function classifyRound(hasClientCalls: boolean, gatewayResults: number, round: number, maxRounds: number): RoundDecision {
  if (hasClientCalls) return 'requires_client_action';
  if (gatewayResults === 0) return 'done';
  if (round + 1 >= maxRounds) return 'incomplete';
  return 'continue';
}
