import type { SimGrammar } from './grammar-output.js';
// The simulator's script and request types, shared by the parser, the request normalisation and
// the planner (see script.ts for how they fit together).

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export type ToolCallStyle = 'vllm' | 'whole' | 'interleaved';
export type ReasoningField = 'reasoning' | 'reasoning_content';

/** One tool call a step asks for. `arguments` as a string is sent verbatim (may be invalid JSON). */
export interface ScriptToolCall {
  name: string;
  arguments?: unknown;
  id?: string;
}

/** One round of a script. Every field is optional; see README.md for the semantics. */
export interface ScriptStep {
  text?: string;
  reasoning?: string;
  reasoning_field?: ReasoningField;
  refusal?: string;
  tool_calls?: ScriptToolCall[];
  chunks?: number;
  chunk_size?: number;
  tool_call_style?: ToolCallStyle;
  finish_reason?: FinishReason;
  usage?: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number };
  status?: number;
  error?: string;
  fail_times?: number;
  hang?: boolean;
  hang_after_chunks?: number;
  close_after_chunks?: number;
  error_after_chunks?: number;
  delay_ms?: number;
  first_delay_ms?: number;
  empty_deltas?: boolean;
}

export interface Script {
  rounds: ScriptStep[];
  repeat_last?: boolean;
  /**
   * Other rounds for conversations whose last user message contains `user_contains` (the first
   * match wins): a client that adds its own user message mid-session — Codex's compaction prompt,
   * its summary hand-off — gets answers of its own instead of the script's round 0 again.
   * `any_contains` matches any message instead (a summary the client put in a developer message).
   */
  when?: Array<{ user_contains?: string; any_contains?: string; rounds: ScriptStep[] }>;
}

/** A conversation message reduced to what the simulator needs. */
export interface SimMessage {
  role: string; // system | developer | user | assistant | tool
  text: string;
}

export interface SimTool {
  name: string;
  parameters: unknown;
}

export type SimToolChoice =
  | { kind: 'auto' }
  | { kind: 'none' }
  | { kind: 'required' }
  | { kind: 'named'; name: string };

export type SimResponseFormat = { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | null;

/** The dialect-neutral view of a request. */
export interface SimRequest {
  dialect: 'chat' | 'responses';
  model: string;
  stream: boolean;
  includeUsage: boolean;
  messages: SimMessage[];
  tools: SimTool[];
  toolChoice: SimToolChoice;
  responseFormat: SimResponseFormat;
  reasoningEffort: string | null;
  maxTokens: number | null;
  /** Stop strings (Chat Completions `stop`): the output ends before the first one it would contain. */
  stop: string[];
  /** vLLM `structured_outputs` `grammar` (Lark) or `regex`: the whole output matches it. */
  grammar: SimGrammar | null;
}

export interface PlannedToolCall {
  /** Id from the script, or null: the encoder mints one in its dialect's format. */
  id: string | null;
  name: string;
  /** The full (possibly truncated) argument text = pieces.join(''). */
  arguments: string;
  pieces: string[];
}

export interface PlannedFailure {
  status: number;
  type: string;
  message: string;
  /** null = fail every time; N = fail only the first N requests reaching `key`. */
  failTimes: number | null;
  key: string;
}

export interface PlannedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
}

export interface RoundPlan {
  roundIndex: number;
  scripted: boolean;
  failure: PlannedFailure | null;
  reasoningField: ReasoningField;
  reasoning: string[];
  text: string[];
  refusal: string[];
  toolCalls: PlannedToolCall[];
  toolCallStyle: ToolCallStyle;
  finishReason: FinishReason;
  /** The stop string that ended the output (vLLM's `stop_reason`), else null. */
  stopReason: string | null;
  usage: PlannedUsage;
  hang: boolean;
  hangAfterChunks: number | null;
  closeAfterChunks: number | null;
  errorAfterChunks: number | null;
  delayMs: number;
  firstDelayMs: number;
  emptyDeltas: boolean;
}

export interface PlanOptions {
  defaultDelayMs?: number;
}

export type Json = any;

export const isObj = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
