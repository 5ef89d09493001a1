/**
 * Chat Completions wire types (gateway → upstream) and the codecs between them and the neutral
 * model types. Reference: docs/reference/chat-completions-upstream.md.
 */
import type { FinishReason, GrammarField, ModelGrammar, ModelItem, ModelPart, ModelRequest, RawEvent } from './model.js';

export interface ChatToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string }
  | { role: 'user'; content: string | Array<{ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } }> }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; reasoning?: string; reasoning_content?: string }
  | { role: 'tool'; tool_call_id: string; content: string };

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

export type ReasoningReplay = 'none' | 'reasoning' | 'reasoning_content';

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

/** Text parts joined with newlines, as vLLM flattens list content for string-format templates. */
function textOf(parts: ReadonlyArray<{ type: string; text?: string }>): string {
  let out = '';
  for (const part of parts) {
    if (part.type !== 'text') continue;
    out = out.length === 0 ? part.text! : `${out}\n${part.text}`;
  }
  return out;
}

/**
 * Items → messages. Leading system/developer text is merged into one system message (many chat
 * templates accept only one); consecutive calls of one assistant turn become one assistant
 * message with `tool_calls`, each output a `tool` message paired by `call_id`.
 */
export function encodeChatMessages(items: readonly ModelItem[], reasoningReplay: ReasoningReplay): ChatMessage[] {
  const messages: ChatMessage[] = [];
  /** The items each message was made from (parallel to `messages`). */
  const sources: ModelItem[][] = [];
  const push = (message: ChatMessage, from: ModelItem[]): void => {
    messages.push(message);
    sources.push(from);
  };
  let leadingSystem: { texts: string[]; from: ModelItem[] } | null = { texts: [], from: [] };
  let pendingReasoning: { text: string; from: ModelItem[] } | undefined;
  /** The assistant message later calls of the same turn join (its index in `messages`). */
  let openAssistant = -1;
  const assistant = (content: string | null, from: ModelItem): void => {
    const message: AssistantMessage = { role: 'assistant', content };
    const made = [from];
    if (pendingReasoning !== undefined && reasoningReplay !== 'none') {
      message[reasoningReplay] = pendingReasoning.text;
      made.unshift(...pendingReasoning.from);
    }
    pendingReasoning = undefined;
    push(message, made);
    openAssistant = messages.length - 1;
  };

  for (const item of items) {
    if (item.type === 'message' && (item.role === 'system' || item.role === 'developer')) {
      const text = textOf(item.content);
      if (leadingSystem !== null) {
        leadingSystem.texts.push(text);
        leadingSystem.from.push(item);
      } else {
        push({ role: 'system', content: text }, [item]);
      }
      openAssistant = -1;
      continue;
    }
    if (leadingSystem !== null) {
      if (leadingSystem.texts.length > 0) push({ role: 'system', content: leadingSystem.texts.join('\n\n') }, leadingSystem.from);
      leadingSystem = null;
    }
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') {
          assistant(textOf(item.content), item);
        } else {
          openAssistant = -1;
          push(userMessage(item.content), [item]);
        }
        break;
      case 'reasoning':
        pendingReasoning = pendingReasoning === undefined ? { text: item.text, from: [item] } : { text: pendingReasoning.text + item.text, from: [...pendingReasoning.from, item] };
        break;
      case 'function_call': {
        if (openAssistant === -1) assistant(null, item);
        else sources[openAssistant].push(item);
        const message = messages[openAssistant] as AssistantMessage;
        (message.tool_calls ??= []).push({ id: item.callId, type: 'function', function: { name: item.name, arguments: item.arguments } });
        break;
      }
      case 'function_call_output':
        push({ role: 'tool', tool_call_id: item.callId, content: item.output }, [item]);
        // outputs close the assistant turn: a later call starts a new assistant message
        openAssistant = -1;
        break;
    }
  }
  if (leadingSystem !== null && leadingSystem.texts.length > 0) push({ role: 'system', content: leadingSystem.texts.join('\n\n') }, leadingSystem.from);
  for (let i = 0; i < messages.length; i++) messages[i] = shared(messages[i], sources[i], reasoningReplay);
  orderToolResults(messages);
  return messages;
}

type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

function userMessage(content: readonly ModelPart[]): ChatMessage {
  const hasImage = content.some((p) => p.type === 'image');
  return {
    role: 'user',
    content: hasImage
      ? content.map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image_url' as const, image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } }))
      : textOf(content),
  };
}

/** A message made only from shared items, by its first item (see `shared`). */
const kept = new WeakMap<ModelItem, { from: readonly ModelItem[]; replay: ReasoningReplay; message: ChatMessage }>();

/**
 * Frozen model items are shared history: the engine converts a stored chain once and hands the
 * same objects every turn. A message made only from such items is kept (frozen) and is the same
 * object whenever the same items make it again, so the transport can keep its bytes
 * (`upstream/chat-body.ts`) and a long chain is not serialised again on every turn.
 */
function shared(message: ChatMessage, from: readonly ModelItem[], replay: ReasoningReplay): ChatMessage {
  if (from.length === 0 || !from.every((item) => Object.isFrozen(item))) return message;
  const before = kept.get(from[0]);
  if (before !== undefined && before.replay === replay && before.from.length === from.length && before.from.every((item, i) => item === from[i])) return before.message;
  if (Array.isArray(message.content)) for (const part of message.content) Object.freeze(part);
  Object.freeze(message.content);
  if (message.role === 'assistant' && message.tool_calls) for (const call of message.tool_calls) Object.freeze(Object.freeze(call).function);
  Object.freeze((message as AssistantMessage).tool_calls);
  kept.set(from[0], { from, replay, message: Object.freeze(message) });
  return message;
}

/**
 * Tool results directly after an assistant message follow its `tool_calls` order: some chat
 * templates pair calls and results by position, while Responses clients may answer in any order.
 */
function orderToolResults(messages: ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role !== 'assistant' || !message.tool_calls) continue;
    let end = i + 1;
    while (end < messages.length && messages[end].role === 'tool') end++;
    if (end - (i + 1) < 2) continue;
    const order = new Map(message.tool_calls.map((call, index) => [call.id, index]));
    const results = messages.slice(i + 1, end) as Array<Extract<ChatMessage, { role: 'tool' }>>;
    results.sort((a, b) => (order.get(a.tool_call_id) ?? order.size) - (order.get(b.tool_call_id) ?? order.size));
    messages.splice(i + 1, results.length, ...results);
  }
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
