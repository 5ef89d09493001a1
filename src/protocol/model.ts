/**
 * The neutral model-facing types: what Switchyard asks an inference server for, and the raw
 * events it hears back, independent of the upstream dialect (Chat Completions or Responses).
 * Every tool the model sees is a plain function here.
 */

export interface ModelFunction {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export type ModelPart =
  | { type: 'text'; text: string }
  | { type: 'image'; url: string; detail?: string };

export type ModelItem =
  | { type: 'message'; role: 'system' | 'developer' | 'user' | 'assistant'; content: ModelPart[] }
  | { type: 'reasoning'; text: string }
  | { type: 'function_call'; callId: string; name: string; arguments: string }
  | { type: 'function_call_output'; callId: string; output: string };

export type ModelToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type ModelResponseFormat =
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

export interface ModelRequest {
  model: string;
  items: readonly ModelItem[];
  tools: ModelFunction[];
  toolChoice?: ModelToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  responseFormat?: ModelResponseFormat;
  reasoningEffort?: string;
  /** Stop strings (Messages `stop_sequences`). */
  stop?: string[];
  /** Top-k sampling (Messages `top_k`), for servers that take it (vLLM, SGLang, llama.cpp). */
  topK?: number;
  /**
   * Decode the whole output under this grammar (vLLM `structured_outputs`), where the upstream
   * supports it (`UpstreamClient.grammarSupport`); elsewhere it is not sent.
   */
  grammar?: ModelGrammar;
}

export interface ModelGrammar {
  syntax: 'lark' | 'regex';
  definition: string;
}

/** How an upstream takes a grammar: vLLM ≥ 0.12 `structured_outputs`, older vLLM `guided_grammar` / `guided_regex`. */
export type GrammarField = 'structured_outputs' | 'guided';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other';

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

/** What the upstream said, in order. Tool calls are keyed by their per-round index. */
export type RawEvent =
  | { kind: 'text'; delta: string }
  | { kind: 'refusal'; delta: string }
  | { kind: 'reasoning'; delta: string }
  | { kind: 'tool_call_start'; index: number; callId: string; name: string }
  | { kind: 'tool_call_args'; index: number; delta: string }
  | { kind: 'usage'; usage: ModelUsage }
  /** `stopSequence`: the stop string that ended the output (vLLM's `stop_reason`), when one did. */
  | { kind: 'finish'; reason: FinishReason; stopSequence?: string }
  | { kind: 'error'; message: string; code?: string };
