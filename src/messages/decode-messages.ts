import { isDeepStrictEqual } from 'node:util';
import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { ResolvedInputItem } from '../protocol/responses.js';
import { isPlainObject } from '../tools/validate.js';
import { deepFreeze } from '../util/freeze.js';
import { withSharedLength } from '../util/kept-runs.js';
import { normalizeStoredItem } from '../util/items.js';
import { decodedRuns, keptRun, runEnd } from './decoded-runs.js';
import { requireString } from './fields.js';
import { ToolPairing, type PairingMark } from './tool-pairing.js';

/**
 * `system` and `messages` → the engine's instructions and input items. Client tool calls and their
 * results become `function_call` / `function_call_output` paired by id; replayed server blocks
 * (web search, MCP) become what the model saw when they ran.
 */

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

export function decodeSystem(system: unknown): string | null {
  if (system === undefined || system === null) return null;
  if (typeof system === 'string') return system.length > 0 ? system : null;
  if (!Array.isArray(system)) throw invalidRequest('system: Input should be a string or a list of text blocks.', 'system', 'invalid_type');
  const texts = system.map((block: unknown, i) => {
    if (!isPlainObject(block) || block.type !== 'text' || typeof block.text !== 'string') throw invalidRequest(`system[${i}]: Input should be a text block.`, `system[${i}]`, 'invalid_type');
    return block.text;
  });
  return texts.length > 0 ? texts.join('\n\n') : null;
}

/** A block of a message, with where it was sent (for errors) and its place in the message. */
interface SentBlock {
  block: JsonObject;
  param: string;
  index: number;
}

/** One message's input items, and its blocks accepted but not acted on (by place and type). */
interface DecodedMessage {
  items: readonly JsonObject[];
  ignored: ReadonlyArray<{ index: number; type: string }>;
}

/**
 * Decoded messages by the message a client sent, for messages that reach a request as the same
 * frozen object every time (a conversation resent whole, parsed once: http/json.ts). Their items
 * are frozen too and the same every turn, so the engine holds their model items and the chat
 * encoder their messages (engine/held-history.ts): a turn decodes what it adds.
 */
const decodedMessages = new WeakMap<object, DecodedMessage>();
/**
 * The decoded message that last followed a frozen message. A client that marks its newest message
 * for caching (Claude Code's `cache_control`) sends it again without the mark the turn after: a new
 * object, decoded to the same items (the mark is no part of them). Those are the items decoded
 * before, so what the engine keeps by item (the held history, the encoder's messages) still holds.
 */
const decodedAfter = new WeakMap<object, { decoded: DecodedMessage; kept: DecodedMessage }>();

export function decodeMessages(messages: unknown, ignored: string[]): JsonObject[] {
  if (!Array.isArray(messages)) throw invalidRequest('messages: Field required (a list of messages).', 'messages', 'missing_required_parameter');
  if (messages.length === 0) throw invalidRequest('messages: at least one message is required.', 'messages', 'invalid_value');
  // a conversation resent whole: from where the kept run of its last request ends
  const end = runEnd(messages);
  const run = end > 0 ? keptRun(messages, end) : undefined;
  const items = run === undefined ? [] : run.value.items.slice();
  const skipped = run === undefined ? [] : run.value.ignored.slice();
  const pairing = run === undefined ? ToolPairing.fresh() : ToolPairing.from(run.value.pairing);
  /** Where the run to keep ends (this request's leading frozen messages but the last). */
  let kept: { items: number; ignored: number; pairing: PairingMark } | undefined;
  /** How many leading items are shared: those of the leading frozen messages (kept decodings, frozen). */
  let shared = items.length;
  for (let i = run?.items.length ?? 0; i < messages.length; i++) {
    if (i === end && i > (run?.items.length ?? 0)) kept = { items: items.length, ignored: skipped.length, pairing: pairing.mark() };
    const message: unknown = messages[i];
    const frozen = Object.isFrozen(message) && isPlainObject(message);
    let decoded = frozen ? decodedMessages.get(message) : undefined;
    if (decoded === undefined) {
      decoded = decodeMessage(message, i);
      if (frozen) decoded = keptDecoding(message, i > 0 ? messages[i - 1] : undefined, decoded);
    }
    for (const item of decoded.items) items.push(item);
    if (frozen && shared === items.length - decoded.items.length) shared = items.length;
    for (const { index, type } of decoded.ignored) skipped.push(`messages[${i}].content[${index}] (${type})`);
    pairing.add(message as JsonObject, i, messages as JsonObject[]);
  }
  pairing.finish(messages as JsonObject[]);
  if (kept !== undefined) {
    const state = pairing.stateAt(kept.pairing, run?.value.pairing);
    decodedRuns.keep(messages.slice(0, end), { items: items.slice(0, kept.items), ignored: skipped.slice(0, kept.ignored), pairing: state }, run);
  }
  for (const entry of skipped) ignored.push(entry);
  // the engine's stages of the input look no further than these (util/kept-runs.ts)
  return withSharedLength(items, shared);
}

/**
 * A frozen message's decoding, kept: its items as the engine stores them (an id minted once, a
 * message's status: `normalizeStoredItem` then takes them as they are, every turn), or those of
 * the message that followed the same message before when it decoded alike.
 */
function keptDecoding(message: object, before: unknown, decoded: DecodedMessage): DecodedMessage {
  const follows = Object.isFrozen(before) && isPlainObject(before);
  const earlier = follows ? decodedAfter.get(before) : undefined;
  const kept = earlier !== undefined && isDeepStrictEqual(earlier.decoded, decoded) ? earlier.kept : deepFreeze({ items: decoded.items.map(asStored), ignored: decoded.ignored });
  decodedMessages.set(message, kept);
  if (follows) decodedAfter.set(before, { decoded, kept });
  return kept;
}

/** A decoded input item as the engine stores it (the decoder makes valid Responses input items). */
const asStored = (item: JsonObject) => normalizeStoredItem(item as ResolvedInputItem) as JsonObject;

function decodeMessage(message: unknown, i: number): DecodedMessage {
  const param = `messages[${i}]`;
  if (!isPlainObject(message)) throw invalidRequest(`${param}: Input should be an object.`, param, 'invalid_type');
  const role = message.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system') throw invalidRequest(`${param}.role: Input should be 'user', 'assistant' or 'system'.`, `${param}.role`, 'invalid_value');
  const content = message.content;
  let blocks: SentBlock[];
  if (typeof content === 'string') blocks = [{ block: { type: 'text', text: content }, param: `${param}.content`, index: 0 }];
  else if (Array.isArray(content)) {
    blocks = content.map((block: unknown, j) => {
      if (!isPlainObject(block) || typeof block.type !== 'string') throw invalidRequest(`${param}.content[${j}]: Input should be a content block with a 'type'.`, `${param}.content[${j}]`, 'invalid_type');
      return { block, param: `${param}.content[${j}]`, index: j };
    });
  } else throw invalidRequest(`${param}.content: Input should be a string or a list of content blocks.`, `${param}.content`, 'invalid_type');
  const ignored: Array<{ index: number; type: string }> = [];
  if (role === 'system') {
    // SDK 1.x types system-role messages; they are instructions at that point of the conversation
    return { items: [{ type: 'message', role: 'system', content: [{ type: 'input_text', text: blocks.map((b) => textOf(b.block, b.param)).join('\n\n') }] }], ignored };
  }
  return { items: role === 'user' ? decodeUserBlocks(blocks, ignored) : decodeAssistantBlocks(blocks, ignored), ignored };
}

function decodeUserBlocks(blocks: readonly SentBlock[], ignored: Array<{ index: number; type: string }>): JsonObject[] {
  const items: JsonObject[] = [];
  let parts: JsonObject[] = [];
  const flush = () => {
    if (parts.length > 0) items.push({ type: 'message', role: 'user', content: parts });
    parts = [];
  };
  for (const { block, param, index } of blocks) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'input_text', text: textOf(block, param) });
        break;
      case 'image':
        parts.push(imagePart(block, param));
        break;
      case 'document':
        parts.push({ type: 'input_text', text: documentText(block, param) });
        break;
      case 'search_result':
        parts.push({ type: 'input_text', text: searchResultText(block) });
        break;
      case 'tool_result': {
        // results come first in their message (reference §2); any text before them keeps its place
        flush();
        const id = requireString(block, 'tool_use_id', param);
        const text = toolResultText(block.content, `${param}.content`);
        items.push({ type: 'function_call_output', call_id: id, output: block.is_error === true ? `Error: ${text}` : text });
        break;
      }
      default:
        ignored.push({ index, type: String(block.type) });
    }
  }
  flush();
  return items;
}

function decodeAssistantBlocks(blocks: readonly SentBlock[], ignored: Array<{ index: number; type: string }>): JsonObject[] {
  const items: JsonObject[] = [];
  let parts: JsonObject[] = [];
  const flush = () => {
    if (parts.length > 0) items.push({ type: 'message', role: 'assistant', content: parts });
    parts = [];
  };
  /** Server-tool calls of this turn by id, waiting for their result block. */
  const serverCalls = new Map<string, JsonObject>();
  for (const { block, param, index } of blocks) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'output_text', text: textOf(block, param), annotations: [] });
        break;
      case 'thinking':
        flush();
        // replayed as reasoning: the model may see its earlier thinking (upstream.reasoningReplay)
        if (typeof block.thinking === 'string' && block.thinking) items.push({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: block.thinking }] });
        break;
      case 'redacted_thinking':
        break;
      case 'tool_use': {
        flush();
        const id = requireString(block, 'id', param);
        const name = requireString(block, 'name', param);
        items.push({ type: 'function_call', call_id: id, name, arguments: JSON.stringify(block.input ?? {}) });
        break;
      }
      case 'server_tool_use':
      case 'mcp_tool_use':
        flush();
        serverCalls.set(requireString(block, 'id', param), block);
        break;
      case 'web_search_tool_result': {
        const call = serverCalls.get(block.tool_use_id as string);
        if (!call) throw invalidRequest(`${param}: no \`server_tool_use\` block with id '${String(block.tool_use_id)}' before this result.`, param, 'invalid_value');
        serverCalls.delete(block.tool_use_id as string);
        // the earlier search, as the model saw it: a call of the web_search function and its results
        items.push({ type: 'function_call', call_id: call.id, name: String(call.name ?? 'web_search'), arguments: JSON.stringify(call.input ?? {}) });
        items.push({ type: 'function_call_output', call_id: call.id, output: webSearchResultText(block.content) });
        break;
      }
      case 'mcp_tool_result': {
        const call = serverCalls.get(block.tool_use_id as string);
        if (!call) throw invalidRequest(`${param}: no \`mcp_tool_use\` block with id '${String(block.tool_use_id)}' before this result.`, param, 'invalid_value');
        serverCalls.delete(block.tool_use_id as string);
        const text = toolResultText(block.content, `${param}.content`);
        const failed = block.is_error === true;
        items.push({
          type: 'mcp_call',
          id: call.id,
          server_label: String(call.server_name ?? ''),
          name: String(call.name ?? ''),
          arguments: JSON.stringify(call.input ?? {}),
          output: failed ? null : text,
          error: failed ? text : null,
          status: failed ? 'failed' : 'completed',
        });
        break;
      }
      default:
        ignored.push({ index, type: String(block.type) });
    }
  }
  flush();
  return items;
}

function textOf(block: JsonObject, param: string): string {
  if (block.type !== 'text' || typeof block.text !== 'string') throw invalidRequest(`${param}: Input should be a text block with a string 'text'.`, param, 'invalid_type');
  return block.text;
}

function imagePart(block: JsonObject, param: string): JsonObject {
  const source = block.source;
  if (!isPlainObject(source)) throw invalidRequest(`${param}.source: Field required.`, `${param}.source`, 'missing_required_parameter');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || !IMAGE_TYPES.has(source.media_type)) {
      throw invalidRequest(`${param}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'.`, `${param}.source.media_type`, 'invalid_value');
    }
    if (typeof source.data !== 'string' || source.data.length === 0) throw invalidRequest(`${param}.source.data: Field required.`, `${param}.source.data`, 'missing_required_parameter');
    return { type: 'input_image', image_url: `data:${source.media_type};base64,${source.data}`, detail: 'auto' };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\//i.test(source.url)) throw invalidRequest(`${param}.source.url: expected an http(s) URL.`, `${param}.source.url`, 'invalid_value');
    return { type: 'input_image', image_url: source.url, detail: 'auto' };
  }
  throw invalidRequest(`${param}.source.type: '${String(source.type)}' is not supported by this gateway (use 'base64' or 'url').`, `${param}.source.type`, 'invalid_value');
}

/** Documents the model can read as text; a PDF (or a file reference) cannot be read here: a clear 400. */
function documentText(block: JsonObject, param: string): string {
  const source = block.source;
  if (!isPlainObject(source)) throw invalidRequest(`${param}.source: Field required.`, `${param}.source`, 'missing_required_parameter');
  let text: string;
  if (source.type === 'text' && typeof source.data === 'string') text = source.data;
  else if (source.type === 'content') text = toolResultText(source.content, `${param}.source.content`);
  else if (source.type === 'base64' && typeof source.data === 'string' && typeof source.media_type === 'string' && source.media_type.startsWith('text/')) text = Buffer.from(source.data, 'base64').toString('utf8');
  else {
    throw invalidRequest(
      `${param}.source: this gateway reads documents as text only ('text' or 'content' sources, or base64 'text/*'); a ${String(source.media_type ?? source.type)} document cannot be read — extract its text and send it as a text document.`,
      `${param}.source`,
      'invalid_value',
    );
  }
  const title = typeof block.title === 'string' && block.title ? `Document: ${block.title}\n` : '';
  const context = typeof block.context === 'string' && block.context ? `Context: ${block.context}\n` : '';
  return title || context ? `${title}${context}\n${text}` : text;
}

function searchResultText(block: JsonObject): string {
  const lines = [`Search result: ${String(block.title ?? '')}`, `Source: ${String(block.source ?? '')}`];
  if (Array.isArray(block.content)) for (const part of block.content) if (isPlainObject(part) && typeof part.text === 'string') lines.push(part.text);
  return lines.join('\n');
}

/** A `tool_result` (or MCP result) content: a string, or text/image/document blocks flattened to text. */
function toolResultText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidRequest(`${param}: Input should be a string or a list of content blocks.`, param, 'invalid_type');
  return content
    .map((block: unknown, i) => {
      if (!isPlainObject(block)) throw invalidRequest(`${param}[${i}]: Input should be a content block.`, `${param}[${i}]`, 'invalid_type');
      if (block.type === 'text') return textOf(block, `${param}[${i}]`);
      if (block.type === 'image') return '[image]';
      if (block.type === 'document') return documentText(block, `${param}[${i}]`);
      if (block.type === 'search_result') return searchResultText(block);
      return '';
    })
    .join('\n');
}

/** An earlier `web_search_tool_result`, as the model is shown search results: numbered sources. */
function webSearchResultText(content: unknown): string {
  if (!Array.isArray(content)) {
    const code = isPlainObject(content) ? String(content.error_code ?? 'unavailable') : 'unavailable';
    return `Error: the search failed (${code}).`;
  }
  const results = content.filter(isPlainObject);
  if (results.length === 0) return 'No results.';
  return results.map((r, i) => `[${i + 1}] ${String(r.title ?? r.url)}\nURL: ${String(r.url)}`).join('\n\n');
}
