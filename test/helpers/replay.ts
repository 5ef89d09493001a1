/**
 * Replays recorded upstream streams through the gateway's pure pipeline — no HTTP:
 * bytes → SseParser → JSON.parse → ChatStreamDecoder / ResponsesStreamDecoder → RoundTranslator
 * → ResponseAccumulator → public events (serialized at emit time, ids normalized).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ResponseAccumulator, type TerminalState } from '../../src/engine/accumulator.js';
import { parseCreateRequest } from '../../src/engine/request.js';
import { newResponseObject } from '../../src/engine/response-object.js';
import { RoundTranslator } from '../../src/engine/round.js';
import { ChatStreamDecoder } from '../../src/protocol/chat.js';
import type { RawEvent } from '../../src/protocol/model.js';
import { ResponsesStreamDecoder } from '../../src/protocol/responses-upstream.js';
import { checkChatChunk, checkResponsesEvent } from '../../src/protocol/upstream-chunks.js';
import { SseParser } from '../../src/protocol/sse.js';
import type { DeclareContext } from '../../src/tools/handler.js';
import { parseTools, registerTools, type ToolRegistry } from '../../src/tools/registry.js';

export type PublicEvent = Record<string, any>;

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

/** The `data:` payloads of a recorded stream, one per line. */
export function fixtureLines(dialect: 'chat' | 'responses', name: string): string[] {
  return readFileSync(join(FIXTURES, dialect, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
}

const encoder = new TextEncoder();

/** The recorded stream as the upstream wrote it: chat servers send data-only events, Responses servers `event:` + `data:`. */
export function fixtureBytes(dialect: 'chat' | 'responses', name: string): Uint8Array {
  const lines = fixtureLines(dialect, name);
  const text =
    dialect === 'chat'
      ? lines.map((line) => `data: ${line}\n\n`).join('')
      : lines.map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`).join('');
  return encoder.encode(text);
}

/** The tools every replay declares: three client functions and the custom `apply_patch`. */
export const REPLAY_TOOLS = [
  { type: 'function', name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] } },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] } },
  { type: 'function', name: 'list_dir', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  { type: 'custom', name: 'apply_patch', description: 'Apply a patch in the V4A format.' },
];

const declareContext: DeclareContext = { executionFor: () => undefined, logOnce: () => {} };

export function replayRegistry(tools: unknown[] = REPLAY_TOOLS): ToolRegistry {
  return registerTools(parseTools(tools), declareContext);
}

/** A minimal request: the Response object it creates is echoed in the lifecycle events, so keep it small. */
const REQUEST = parseCreateRequest({ model: 'test-model', input: 'hi', stream: true });

const ID_PATTERN = /\b(msg|fc|rs|ctc|resp)_[0-9a-f]{16,}\b/g;

/** Replaces every gateway-minted id by `<prefix>_<n>` (n counted per prefix, in order of first appearance). */
export function normalizeIds(serialized: readonly string[]): string[] {
  const seen = new Map<string, string>();
  const counters = new Map<string, number>();
  // one pass over the whole list (events never contain a raw newline: JSON escapes it)
  const joined = serialized.join('\n').replace(ID_PATTERN, (id, prefix: string) => {
    let placeholder = seen.get(id);
    if (placeholder === undefined) {
      const n = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, n);
      placeholder = `${prefix}_${n}`;
      seen.set(id, placeholder);
    }
    return placeholder;
  });
  return serialized.length === 0 ? [] : joined.split('\n');
}

/** The SSE `data` payloads of a byte stream, as the upstream clients see them. */
export function ssePayloads(bytes: readonly Uint8Array[]): string[] {
  const parser = new SseParser();
  const out: string[] = [];
  for (const chunk of bytes) for (const message of parser.push(chunk)) out.push(message.data);
  for (const message of parser.finish()) out.push(message.data);
  return out;
}

/** Raw events of a Chat Completions byte stream. Generated call ids are `call_gen_<n>`. */
export function decodeChatRaw(bytes: readonly Uint8Array[]): RawEvent[] {
  let n = 0;
  const decoder = new ChatStreamDecoder(() => `call_gen_${++n}`);
  const out: RawEvent[] = [];
  for (const data of ssePayloads(bytes)) {
    if (data === '[DONE]') continue;
    decoder.push(checkChatChunk(JSON.parse(data)), out);
  }
  return out;
}

/** Raw events of a Responses byte stream. Generated call ids are `call_gen_<n>`. */
export function decodeResponsesRaw(bytes: readonly Uint8Array[]): RawEvent[] {
  let n = 0;
  const decoder = new ResponsesStreamDecoder(() => `call_gen_${++n}`);
  const out: RawEvent[] = [];
  for (const data of ssePayloads(bytes)) {
    if (data === '[DONE]') continue;
    decoder.push(checkResponsesEvent(JSON.parse(data)), out);
  }
  return out;
}

/**
 * Raw events → public events, as one inference round of the turn loop: `start()`, every event
 * through the RoundTranslator, `finish()` (open items `incomplete` when the model was cut
 * off), settle and the terminal event. Each event is serialized when emitted (events reference
 * live state). Returns the serialized events with ids normalized.
 */
export function translateSerialized(raw: readonly RawEvent[], registry: ToolRegistry): string[] {
  const response = newResponseObject('resp_00000000000000000000000000000000', 0, REQUEST);
  const serialized: string[] = [];
  const acc = new ResponseAccumulator(response, (_type, json) => serialized.push(json));
  acc.start();
  const translator = new RoundTranslator(acc, registry);
  for (const event of raw) translator.push(event);
  const result = translator.finish(translator.truncated ? 'incomplete' : 'completed');
  // as the turn loop settles a round that ended the turn (engine/turn.ts)
  const state: TerminalState =
    result.finishReason === 'length' ? { status: 'incomplete', incompleteReason: 'max_output_tokens' }
    : result.finishReason === 'content_filter' ? { status: 'incomplete', incompleteReason: 'content_filter' }
    : { status: 'completed' };
  acc.settle(state, 0);
  acc.announceTerminal();
  return normalizeIds(serialized);
}

/** A Chat Completions byte stream replayed to public events, serialized (cheap to compare). */
export function replayChatSerialized(bytes: readonly Uint8Array[], registry: ToolRegistry): string[] {
  return translateSerialized(decodeChatRaw(bytes), registry);
}

/** A Chat Completions byte stream replayed to public events (ids normalized). */
export function replayChat(bytes: readonly Uint8Array[], registry: ToolRegistry): PublicEvent[] {
  return replayChatSerialized(bytes, registry).map((json) => JSON.parse(json) as PublicEvent);
}

/** A Responses byte stream replayed to public events (ids normalized). */
export function replayResponses(bytes: readonly Uint8Array[], registry: ToolRegistry): PublicEvent[] {
  return translateSerialized(decodeResponsesRaw(bytes), registry).map((json) => JSON.parse(json) as PublicEvent);
}

/** `[0,i)` and `[i,n)`: the stream cut in two at byte `i`. */
export function splitAt(bytes: Uint8Array, i: number): Uint8Array[] {
  return [bytes.subarray(0, i), bytes.subarray(i)];
}

/** One chunk per byte. */
export function oneByteChunks(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) out.push(bytes.subarray(i, i + 1));
  return out;
}

// ---------- views over public events ----------

export function eventsOfType(events: readonly PublicEvent[], type: string): PublicEvent[] {
  return events.filter((e) => e.type === type);
}

/** The final form of every output item (from `response.output_item.done`), in output order. */
export function doneItems(events: readonly PublicEvent[]): PublicEvent[] {
  return eventsOfType(events, 'response.output_item.done')
    .sort((a, b) => a.output_index - b.output_index)
    .map((e) => e.item);
}

/** The terminal event's response. */
export function terminalResponse(events: readonly PublicEvent[]): PublicEvent {
  const last = events[events.length - 1];
  if (!last || !['response.completed', 'response.incomplete', 'response.failed'].includes(last.type)) throw new Error(`no terminal event (last: ${last?.type})`);
  return last.response;
}

/** Concatenated `delta` of every event of `type` (optionally for one item). */
export function joinDeltas(events: readonly PublicEvent[], type: string, itemId?: string): string {
  return eventsOfType(events, type)
    .filter((e) => itemId === undefined || e.item_id === itemId)
    .map((e) => e.delta as string)
    .join('');
}
