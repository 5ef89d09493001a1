import {
  blockIdOf,
  messageIdOf,
  messagesErrorType,
  toolUseIdOf,
  type ContentBlock,
  type ContentDelta,
  type MessageObject,
  type MessagesStreamEvent,
  type StopReason,
  type WebSearchResultLocation,
} from '../protocol/messages.js';
import type { DeltaHead } from '../engine/types.js';
import type { ResponseObject } from '../protocol/responses.js';
import { citedText, opaque, stopReasonOf, thinkingSignature } from './stream-fields.js';

type Json = Record<string, any>;

/** The Responses events with a Messages counterpart (lifecycle events without one — in_progress, searching, … — are not even parsed). */
const HANDLED = new Set([
  ...['response.created', 'response.output_item.added', 'response.content_part.added', 'response.output_text.annotation.added', 'response.content_part.done'],
  ...['response.output_text.delta', 'response.refusal.delta', 'response.reasoning_text.delta', 'response.reasoning_summary_text.delta', 'response.function_call_arguments.delta'],
  ...['response.mcp_call_arguments.done', 'response.output_item.done', 'response.completed', 'response.incomplete', 'response.failed'],
]);

/** Receives each Messages event in order. */
export type MessagesEventSink = (event: MessagesStreamEvent) => void;

interface OpenBlock {
  /** Which public item (and content part) feeds this block. */
  key: string;
  index: number;
  type: ContentBlock['type'];
  /** Text so far (text blocks: for `cited_text`; thinking blocks: for the signature). */
  text: string;
}

/**
 * Translates the engine's public Responses events into the Messages stream (reference §6), one
 * event at a time: `push()` per Responses event, the terminal event ends it. Blocks never
 * interleave: a block is started, filled and stopped before the next one starts, and a source
 * that resumes after another block (text after a tool call) opens a fresh block. Gateway work
 * becomes server blocks: `web_search_call` → `server_tool_use` + `web_search_tool_result`,
 * `mcp_call` → `mcp_tool_use` + `mcp_tool_result`. Blocking answers fold this same stream.
 */
export class MessagesStreamEncoder {
  private nextIndex = 0;
  private open: OpenBlock | null = null;
  private ended = false;
  private sawRefusal = false;
  /**
   * Client calls in the order they started. Only the first streams live: parallel calls whose
   * arguments arrive interleaved wait here (arguments buffered) until the ones before them stop.
   */
  private readonly calls: Array<{ outputIndex: number; callId: string; name: string; args: string; sent: number; done: boolean }> = [];
  /** `mcp_call` items by output index, until their arguments are complete. */
  private readonly mcpCalls = new Map<number, { id: string; name: string; server: string; announced: boolean }>();

  /**
   * `failureStatus`: the HTTP status of what ended a failed turn (it picks the `error` event's type).
   * `stopSequence`: the stop string that ended the model's output, when the upstream said so.
   */
  constructor(
    private readonly sink: MessagesEventSink,
    private readonly failureStatus: () => number | undefined = () => undefined,
    private readonly stopSequence: () => string | undefined = () => undefined,
    /**
     * The run's Response, as its lifecycle events would carry it: read instead of their JSON, which
     * the run then does not make (`RunHooks.readsResponse`) — it echoes the request's tools and
     * instructions (Claude Code's: ≈ 40 KB, twice a turn).
     */
    private readonly runningResponse: () => ResponseObject | undefined = () => undefined,
  ) {}

  get finished(): boolean {
    return this.ended;
  }

  /** A turn that simply ended, but on one of the request's stop strings, says which (`stop_sequence`). */
  private stopDelta(stopReason: StopReason): { stop_reason: StopReason; stop_sequence: string | null; stop_details: null; container: null } {
    const sequence = stopReason === 'end_turn' ? this.stopSequence() : undefined;
    return { stop_reason: sequence === undefined ? stopReason : 'stop_sequence', stop_sequence: sequence ?? null, stop_details: null, container: null };
  }

  /**
   * One Responses event (`type` plus its serialized payload, as the engine's sink receives it); a
   * token's delta with its head and text, which are read instead of parsing its JSON back.
   */
  push(type: string, json: string, head?: DeltaHead, delta?: string): void {
    if (this.ended) return;
    if (head !== undefined && delta !== undefined) {
      this.pushDelta(type, head.outputIndex, head.contentIndex, delta);
      return;
    }
    if (!HANDLED.has(type)) return;
    if (type === 'response.created' || type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      const response = (this.runningResponse() as Json | undefined) ?? (JSON.parse(json) as Json).response;
      if (type === 'response.created') this.start(response);
      else if (type === 'response.failed') this.fail(response);
      else this.complete(response);
      return;
    }
    const event = JSON.parse(json) as Json;
    switch (type) {
      case 'response.output_item.added':
        this.itemAdded(event.output_index, event.item);
        return;
      case 'response.content_part.added':
        if (event.part?.type === 'output_text' || event.part?.type === 'refusal') this.ensureOpen(`${event.output_index}:${event.content_index}`, () => ({ type: 'text', text: '', citations: null }));
        return;
      case 'response.output_text.delta':
      case 'response.refusal.delta':
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
      case 'response.function_call_arguments.delta':
        this.pushDelta(type, event.output_index, event.content_index, event.delta);
        return;
      case 'response.output_text.annotation.added':
        this.citation(`${event.output_index}:${event.content_index}`, event.annotation);
        return;
      case 'response.content_part.done':
        this.closeIf(`${event.output_index}:${event.content_index}`);
        return;
      case 'response.mcp_call_arguments.done':
        this.announceMcpCall(event.output_index, event.arguments);
        return;
      case 'response.output_item.done':
        this.itemDone(event.output_index, event.item);
        return;
    }
  }

  private pushDelta(type: string, outputIndex: number, contentIndex: number | undefined, delta: string): void {
    switch (type) {
      case 'response.output_text.delta':
        this.textDelta(`${outputIndex}:${contentIndex}`, delta);
        return;
      case 'response.refusal.delta':
        this.sawRefusal = true;
        this.textDelta(`${outputIndex}:${contentIndex}`, delta);
        return;
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        this.thinkingDelta(`r:${outputIndex}`, delta);
        return;
      case 'response.function_call_arguments.delta':
        this.callDelta(outputIndex, delta);
        return;
      default:
        // deltas with no Messages counterpart (a custom tool's input, streamed as it is written)
        return;
    }
  }

  private start(response: Json): void {
    const message: MessageObject = {
      id: messageIdOf(String(response.id)),
      type: 'message',
      role: 'assistant',
      model: String(response.model),
      content: [],
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      context_management: null,
      // the upstream reports usage at the end of a round: the counts come with message_delta
      usage: {
        input_tokens: 0,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: null,
        server_tool_use: null,
        output_tokens_details: null,
        service_tier: 'standard',
        inference_geo: null,
        speed: null,
        fallback_credit: null,
        iterations: null,
      },
    };
    this.sink({ type: 'message_start', message });
    this.sink({ type: 'ping' });
  }

  private itemAdded(outputIndex: number, item: Json): void {
    switch (item.type) {
      case 'reasoning':
        this.ensureOpen(`r:${outputIndex}`, () => ({ type: 'thinking', thinking: '', signature: '' }));
        return;
      case 'function_call':
        this.calls.push({ outputIndex, callId: String(item.call_id), name: String(item.name), args: '', sent: 0, done: false });
        if (this.calls.length === 1) this.drainCalls();
        return;
      case 'web_search_call': {
        // only searches have a Messages shape; page opens and finds stay the gateway's own steps
        if (item.action?.type !== 'search') return;
        const id = blockIdOf('srvtoolu', String(item.id));
        this.ensureOpen(`ws:${outputIndex}`, () => ({ type: 'server_tool_use', id, name: 'web_search', input: {}, caller: { type: 'direct' } }));
        this.delta({ type: 'input_json_delta', partial_json: JSON.stringify({ query: item.action.query ?? '' }) });
        this.closeOpen();
        return;
      }
      case 'mcp_call':
        this.mcpCalls.set(outputIndex, { id: blockIdOf('mcptoolu', String(item.id)), name: String(item.name), server: String(item.server_label), announced: false });
        return;
      default:
        return;
    }
  }

  private itemDone(outputIndex: number, item: Json): void {
    switch (item.type) {
      case 'reasoning':
        this.closeIf(`r:${outputIndex}`);
        return;
      case 'function_call': {
        const call = this.calls.find((c) => c.outputIndex === outputIndex);
        if (!call) return;
        call.done = true;
        if (this.calls[0] === call) {
          this.closeIf(`fc:${outputIndex}`);
          this.calls.shift();
          this.drainCalls();
        }
        return;
      }
      case 'message':
        this.closeIf(`${outputIndex}:`, true);
        return;
      case 'web_search_call': {
        if (item.action?.type !== 'search') return;
        // the results with titles and dates where the gateway included them, else the bare source URLs
        const results: Json[] = Array.isArray(item.results) ? item.results : Array.isArray(item.action.sources) ? item.action.sources : [];
        const content =
          item.status === 'completed'
            ? results.map((r) => ({
                type: 'web_search_result' as const,
                url: String(r.url),
                title: String(r.title ?? r.url),
                encrypted_content: opaque(String(r.url)),
                page_age: typeof r.published_at === 'string' ? r.published_at : null,
              }))
            : { type: 'web_search_tool_result_error' as const, error_code: 'unavailable' as const };
        this.whole({ type: 'web_search_tool_result', tool_use_id: blockIdOf('srvtoolu', String(item.id)), caller: { type: 'direct' }, content });
        return;
      }
      case 'mcp_call': {
        this.announceMcpCall(outputIndex, item.arguments);
        const call = this.mcpCalls.get(outputIndex);
        this.mcpCalls.delete(outputIndex);
        if (!call) return;
        const failed = item.status !== 'completed';
        const text = failed ? String(item.error ?? 'the tool call failed') : String(item.output ?? '');
        this.whole({ type: 'mcp_tool_result', tool_use_id: call.id, is_error: failed, content: [{ type: 'text', text, citations: null }] });
        return;
      }
      default:
        return;
    }
  }

  private callDelta(outputIndex: number, delta: string): void {
    if (!delta) return;
    const call = this.calls.find((c) => c.outputIndex === outputIndex);
    if (!call) return;
    call.args += delta;
    if (this.open?.key === `fc:${outputIndex}`) this.flushArgs(call);
  }

  /** Sends the arguments of the open call not sent yet. */
  private flushArgs(call: { args: string; sent: number }): void {
    if (call.sent === call.args.length) return;
    this.delta({ type: 'input_json_delta', partial_json: call.args.slice(call.sent) });
    call.sent = call.args.length;
  }

  /** Starts the waiting client calls in order: finished ones whole, the first unfinished one live. */
  private drainCalls(): void {
    while (this.calls.length > 0) {
      const call = this.calls[0];
      this.ensureOpen(`fc:${call.outputIndex}`, () => ({ type: 'tool_use', id: toolUseIdOf(call.callId), name: call.name, input: {}, caller: { type: 'direct' } }));
      this.flushArgs(call);
      if (!call.done) return;
      this.closeOpen();
      this.calls.shift();
    }
  }

  private announceMcpCall(outputIndex: number, args: unknown): void {
    const call = this.mcpCalls.get(outputIndex);
    if (!call || call.announced) return;
    call.announced = true;
    this.ensureOpen(`mcp:${outputIndex}`, () => ({ type: 'mcp_tool_use', id: call.id, name: call.name, server_name: call.server, input: {} }));
    const text = typeof args === 'string' && args.trim() !== '' ? args : '{}';
    this.delta({ type: 'input_json_delta', partial_json: text });
    this.closeOpen();
  }

  private textDelta(key: string, text: string): void {
    if (!text) return;
    this.ensureOpen(key, () => ({ type: 'text', text: '', citations: null }));
    this.open!.text += text;
    this.delta({ type: 'text_delta', text });
  }

  private thinkingDelta(key: string, thinking: string): void {
    if (!thinking) return;
    this.ensureOpen(key, () => ({ type: 'thinking', thinking: '', signature: '' }));
    this.open!.text += thinking;
    this.delta({ type: 'thinking_delta', thinking });
  }

  /** A `url_citation` on text → `citations_delta` on the text block it belongs to. */
  private citation(key: string, annotation: Json): void {
    if (annotation?.type !== 'url_citation' || this.open?.key !== key) return;
    const citation: WebSearchResultLocation = {
      type: 'web_search_result_location',
      url: String(annotation.url),
      title: typeof annotation.title === 'string' ? annotation.title : null,
      encrypted_index: opaque(String(annotation.url)),
      cited_text: citedText(this.open.text, Number(annotation.start_index)),
    };
    this.delta({ type: 'citations_delta', citation });
  }

  private complete(response: Json): void {
    // calls cut off before their item finished still get their block
    for (const call of this.calls) call.done = true;
    this.drainCalls();
    this.closeOpen();
    const output: Json[] = Array.isArray(response.output) ? response.output : [];
    const usage = response.usage as Json | null;
    const cached = Number(usage?.input_tokens_details?.cached_tokens ?? 0);
    const searches = output.filter((item) => item.type === 'web_search_call' && item.action?.type === 'search').length;
    this.sink({
      type: 'message_delta',
      delta: this.stopDelta(stopReasonOf(response, output, this.sawRefusal)),
      usage: {
        // Anthropic's input_tokens excludes cache reads (reference §8)
        input_tokens: Math.max(0, Number(usage?.input_tokens ?? 0) - cached),
        output_tokens: Number(usage?.output_tokens ?? 0),
        cache_creation_input_tokens: null,
        cache_read_input_tokens: cached,
        server_tool_use: searches > 0 ? { web_search_requests: searches, web_fetch_requests: 0 } : null,
        output_tokens_details: null,
      },
    });
    this.sink({ type: 'message_stop' });
    this.ended = true;
  }

  /** After the stream started, a failure is an `error` event and nothing follows it. */
  private fail(response: Json): void {
    this.ended = true;
    const message = String(response?.error?.message ?? 'The gateway failed while generating the response.');
    this.sink({ type: 'error', error: { type: messagesErrorType(this.failureStatus() ?? 500), message } });
  }

  // ---------- blocks ----------

  private ensureOpen(key: string, make: () => ContentBlock): void {
    if (this.open?.key === key) return;
    this.closeOpen();
    const block = make();
    this.open = { key, index: this.nextIndex++, type: block.type, text: '' };
    this.sink({ type: 'content_block_start', index: this.open.index, content_block: block });
  }

  /** A block that arrives complete (results): start and stop together. */
  private whole(block: ContentBlock): void {
    this.closeOpen();
    const index = this.nextIndex++;
    this.sink({ type: 'content_block_start', index, content_block: block });
    this.sink({ type: 'content_block_stop', index });
  }

  private delta(delta: ContentDelta): void {
    this.sink({ type: 'content_block_delta', index: this.open!.index, delta });
  }

  private closeIf(key: string, prefix = false): void {
    if (this.open && (prefix ? this.open.key.startsWith(key) : this.open.key === key)) this.closeOpen();
  }

  private closeOpen(): void {
    if (!this.open) return;
    // a thinking block always ends with its signature, however it ends
    if (this.open.type === 'thinking') this.delta({ type: 'signature_delta', signature: thinkingSignature(this.open.text) });
    this.sink({ type: 'content_block_stop', index: this.open.index });
    this.open = null;
  }
}
