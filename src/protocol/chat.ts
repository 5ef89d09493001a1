/**
 * Chat Completions wire types (gateway → upstream) and the codecs between them and the neutral
 * model types. Reference: docs/reference/chat-completions-upstream.md.
 */
import type { FinishReason, GrammarField, ModelGrammar, ModelRequest, RawEvent } from './model.js';
import { encodeChatMessages, type ChatMessage, type ReasoningReplay } from './chat-messages.js';

export { encodeChatMessages };
export type { ChatMessage, ChatToolCall, ReasoningReplay } from './chat-messages.js';


export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  stream_options?: { include_usage: boolean };
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } }>;
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
  parallel_tool_calls?: boolean;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string[];
  top_k?: number;
  response_format?: { type: 'json_object' } | { type: 'json_schema'; json_schema: Record<string, unknown> };
  reasoning_effort?: string;
  /** vLLM: decode under a grammar (`grammarFields`). */
  structured_outputs?: Record<string, unknown>;
  guided_grammar?: string;
  guided_regex?: string;
}

export interface ChatChunkToolCallDelta {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: string | null };
}

export interface ChatChunk {
  id?: string;
  choices?: Array<{
    index?: number;
    delta?: {
      role?: string;
      content?: string | null;
      refusal?: string | null;
      reasoning?: string | null;
      reasoning_content?: string | null;
      tool_calls?: ChatChunkToolCallDelta[] | null;
    };
    finish_reason?: string | null;
    /** vLLM: the stop string (or token id) that ended the output, on the finishing chunk. */
    stop_reason?: string | number | null;
  }>;
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
    completion_tokens_details?: { reasoning_tokens?: number } | null;
  } | null;
  error?: { message?: string; code?: unknown; type?: string } | string;
}


/** Encode a neutral model request as a streaming Chat Completions request. */
export function encodeChatRequest(req: ModelRequest, reasoningReplay: ReasoningReplay = 'none', grammarField?: GrammarField): ChatRequest {
  const body: ChatRequest = {
    model: req.model,
    messages: encodeChatMessages(req.items, reasoningReplay),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (req.tools.length > 0) {
    body.tools = req.tools.map((fn) => ({ type: 'function', function: fn }));
    if (req.toolChoice !== undefined) {
      body.tool_choice = typeof req.toolChoice === 'string' ? req.toolChoice : { type: 'function', function: { name: req.toolChoice.name } };
    }
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.maxOutputTokens !== undefined) body.max_tokens = req.maxOutputTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = req.stop;
  // not in OpenAI's schema; vLLM, SGLang and llama.cpp server take it as an extra sampling parameter
  if (req.topK !== undefined) body.top_k = req.topK;
  if (req.reasoningEffort !== undefined) body.reasoning_effort = req.reasoningEffort;
  if (req.grammar !== undefined && grammarField !== undefined) Object.assign(body, grammarFields(req.grammar, grammarField));
  if (req.responseFormat !== undefined) {
    if (req.responseFormat.type === 'json_object') {
      body.response_format = { type: 'json_object' };
    } else {
      const { type: _type, ...jsonSchema } = req.responseFormat;
      body.response_format = { type: 'json_schema', json_schema: jsonSchema };
    }
  }
  return body;
}

/** vLLM's extra body fields for decoding under a grammar (Lark grammars are accepted by both its backends). */
export function grammarFields(grammar: ModelGrammar, field: GrammarField): Record<string, unknown> {
  const key = grammar.syntax === 'lark' ? 'grammar' : 'regex';
  return field === 'structured_outputs' ? { structured_outputs: { [key]: grammar.definition } } : { [`guided_${key}`]: grammar.definition };
}

const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

/**
 * Decodes a Chat Completions chunk stream into raw events. Tool-call fragments are assembled by
 * `index`: the first fragment names the call (id and name), later ones carry argument text only.
 * A fragment that arrives before its name is buffered until the name does.
 */
export class ChatStreamDecoder {
  private readonly calls = new Map<number, { started: boolean; id: string | undefined; name: string; buffered: string }>();
  private finished = false;

  constructor(private readonly newCallId: () => string) {}

  get sawFinish(): boolean {
    return this.finished;
  }

  push(chunk: ChatChunk, out: RawEvent[]): void {
    if (typeof chunk.error === 'string') {
      out.push({ kind: 'error', message: chunk.error || 'upstream error' });
      return;
    }
    if (chunk.error) {
      out.push({ kind: 'error', message: chunk.error.message ?? 'upstream error', code: typeof chunk.error.code === 'string' ? chunk.error.code : undefined });
      return;
    }
    const choice = chunk.choices?.[0];
    if (choice) {
      const delta = choice.delta;
      if (delta) {
        const reasoning = delta.reasoning ?? delta.reasoning_content;
        if (reasoning) out.push({ kind: 'reasoning', delta: reasoning });
        if (delta.content) out.push({ kind: 'text', delta: delta.content });
        if (delta.refusal) out.push({ kind: 'refusal', delta: delta.refusal });
        if (delta.tool_calls) for (const fragment of delta.tool_calls) this.pushToolFragment(fragment, out);
      }
      if (choice.finish_reason) {
        this.flushUnnamed(out);
        this.finished = true;
        const reason = FINISH_REASONS[choice.finish_reason] ?? 'other';
        out.push(typeof choice.stop_reason === 'string' && reason === 'stop' ? { kind: 'finish', reason, stopSequence: choice.stop_reason } : { kind: 'finish', reason });
      }
    }
    const usage = chunk.usage;
    if (usage) {
      out.push({
        kind: 'usage',
        usage: {
          inputTokens: usage.prompt_tokens ?? 0,
          outputTokens: usage.completion_tokens ?? 0,
          cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
          reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
        },
      });
    }
  }

  private pushToolFragment(fragment: ChatChunkToolCallDelta, out: RawEvent[]): void {
    const index = fragment.index ?? 0;
    let call = this.calls.get(index);
    if (!call) {
      call = { started: false, id: undefined, name: '', buffered: '' };
      this.calls.set(index, call);
    }
    if (fragment.id) call.id ??= fragment.id;
    const fn = fragment.function;
    if (!call.started && fn?.name) call.name += fn.name;
    const args = fn?.arguments;
    if (!call.started) {
      if (args) call.buffered += args;
      if (call.name) this.start(index, call, out);
      return;
    }
    if (args) out.push({ kind: 'tool_call_args', index, delta: args });
  }

  private start(index: number, call: { started: boolean; id: string | undefined; name: string; buffered: string }, out: RawEvent[]): void {
    call.started = true;
    out.push({ kind: 'tool_call_start', index, callId: call.id ?? this.newCallId(), name: call.name });
    if (call.buffered) out.push({ kind: 'tool_call_args', index, delta: call.buffered });
    call.buffered = '';
  }

  /** A call that never got a name cannot be routed; surface it as an unnamed call so the loop answers it. */
  private flushUnnamed(out: RawEvent[]): void {
    for (const [index, call] of this.calls) if (!call.started) this.start(index, call, out);
  }
}
