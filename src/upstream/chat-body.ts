import type { ChatMessage, ChatRequest } from '../protocol/chat.js';
import { sameRunLength } from '../protocol/chat-messages.js';
import { aroundHole, KeptJson } from '../util/kept-json.js';
import { keptToolsBytes } from './kept-tools.js';
import { utf8Bytes } from '../util/utf8.js';

/** Below this many shared messages one `JSON.stringify` is cheaper than assembling kept bytes. */
const MIN_SHARED_MESSAGES = 8;
/** Shared messages sent one by one after a block before they make a segment of it. */
const REBLOCK_AFTER = 32;
const MESSAGES_OPEN = '"messages":[';
const TOOLS_HOLE = '"tools":[]';
const COMMA = Buffer.from(',');

/** The JSON bytes of one shared (frozen) message, serialised once. */
const bytesOf = new WeakMap<ChatMessage, Buffer>();

/**
 * The bytes of a run of shared messages, as segments: each the bytes of some consecutive
 * messages, joined by commas (every segment after the first starts with its comma). A longer run
 * adds a segment and merges the last ones while the one before is no larger (a binary counter):
 * a few segments per block, and every message's bytes copied a few times over a conversation's
 * life instead of the whole run once per growth.
 */
interface Block {
  /** The messages it holds: a block is used only where the request has exactly these (or a prefix of its segments). */
  members: readonly ChatMessage[];
  segments: readonly Segment[];
}
interface Segment {
  bytes: Buffer;
  /** How many of the block's members the segments up to this one hold. */
  end: number;
}
/** Blocks by the run's first message (a conversation's first stored message). */
const blocks = new WeakMap<ChatMessage, Block>();

/**
 * A system prompt this long is kept by content: coding agents resend theirs (Codex ≈ 20 KB, with
 * wide characters) verbatim with every request, in a new object each time. A request holding one
 * is assembled from message bytes: one `JSON.stringify` of it all would serialise the prompt again
 * and, for one wide character in it, the whole request as a two-byte string (B/A 0.825 in CPU per
 * Codex request, bench/README.md stop 29).
 */
const LONG_SYSTEM_CHARS = 4096;
/** Long system prompts' bytes, compared in full before reuse (`KeptJson`): 16 of ≤ 256 K characters. */
const keptSystemPrompts = new KeptJson(utf8Bytes, 16, 256 * 1024);

/**
 * A chat request as the bytes sent upstream: exactly `JSON.stringify(request)`, as one string or
 * as a few large chunks. Frozen messages are a conversation's shared history (`encodeChatMessages`
 * keeps one message object per stored item, the same object every turn): their bytes are kept,
 * and a run of them is kept joined as a block of a few segments that grows every `REBLOCK_AFTER`
 * messages, so a turn continued from a long `previous_response_id` chain neither serialises nor
 * copies its whole history again (issue 16) — the chunks go to the socket as they are. A long
 * system prompt is kept by its content (a coding agent resends the same one with every request).
 */
export function chatRequestBody(request: ChatRequest): string | Buffer[] {
  const { messages } = request;
  let shared = 0;
  for (let i = 0; i < messages.length && shared < MIN_SHARED_MESSAGES; i++) if (Object.isFrozen(messages[i])) shared++;
  // the tools' bytes are kept across requests and rounds (kept-tools.ts), and sent as they are
  const tools = request.tools !== undefined && request.tools.length > 0 ? keptToolsBytes(request.tools) : undefined;
  if (shared < MIN_SHARED_MESSAGES && !messages.some(isLongSystemPrompt)) {
    if (tools === undefined) return JSON.stringify(request);
    const split = withTools(JSON.stringify({ ...request, tools: [] }), tools);
    return split ?? JSON.stringify(request);
  }

  // the request without its messages (and tools), split where they go (a string value cannot hold
  // the unescaped `"messages":[`, so the first occurrence is the key)
  const shell = JSON.stringify(tools === undefined ? { ...request, messages: [] } : { ...request, messages: [], tools: [] });
  const at = shell.indexOf(MESSAGES_OPEN) + MESSAGES_OPEN.length;
  const chunks: Buffer[] = [];
  let pieces: Buffer[] = [utf8Bytes(shell.slice(0, at))];
  for (let i = 0; i < messages.length; ) {
    if (i > 0) pieces.push(COMMA);
    const block = Object.isFrozen(messages[i]) ? blockAt(messages, i) : undefined;
    if (block) {
      chunks.push(Buffer.concat(pieces));
      for (const segment of block.segments) chunks.push(segment.bytes);
      pieces = [];
      i += block.members.length;
    } else if (Object.isFrozen(messages[i])) {
      // a shared system prompt too: its bytes found by the message, not compared
      pieces.push(messageBytes(messages[i]));
      i++;
    } else if (isLongSystemPrompt(messages[i])) {
      pieces.push(systemPromptBytes(messages[i]));
      i++;
    } else {
      // a run of fresh messages (a history the client resends whole) in one JSON.stringify: its
      // array's text without the brackets is the messages' JSON joined by commas
      let end = i + 1;
      while (end < messages.length && !Object.isFrozen(messages[end]) && !isLongSystemPrompt(messages[end])) end++;
      pieces.push(utf8Bytes(JSON.stringify(messages.slice(i, end)).slice(1, -1)));
      i = end;
    }
  }
  const tail = shell.slice(at);
  if (tools === undefined) {
    pieces.push(utf8Bytes(tail));
  } else {
    const split = withTools(tail, tools);
    if (split === undefined) return JSON.stringify(request);
    pieces.push(split[0]);
    chunks.push(Buffer.concat(pieces), tools);
    pieces = [split[2]];
  }
  chunks.push(Buffer.concat(pieces));
  return chunks;
}

/** `json` with its `"tools":[]` filled with `tools`, as three chunks (undefined: see `aroundHole`). */
function withTools(json: string, tools: Buffer): [Buffer, Buffer, Buffer] | undefined {
  const sides = aroundHole(json, TOOLS_HOLE);
  return sides && [utf8Bytes(sides[0]), tools, utf8Bytes(sides[1])];
}

/** The block for the run of shared messages starting at `start`, made or grown when worth it. */
function blockAt(messages: readonly ChatMessage[], start: number): Block | undefined {
  const kept = blocks.get(messages[start]);
  // the kept block's messages this request starts with (frozen, as they were when kept), then the
  // shared messages after them: a long history is compared, not looked at again
  const same = kept === undefined ? 1 : sameRunLength(messages, start, kept.members);
  let run = same;
  while (start + run < messages.length && Object.isFrozen(messages[start + run])) run++;
  // the segments of the kept block this run holds: all of them, or a prefix (a fork from earlier in the chain)
  let held = 0;
  while (kept !== undefined && held < kept.segments.length && kept.segments[held].end <= same) held++;
  const covered = held === 0 ? 0 : kept!.segments[held - 1].end;
  if (run - covered < REBLOCK_AFTER) return held === kept?.segments.length ? kept : held > 0 ? trimmed(messages, start, kept!, held) : undefined;
  const segments = kept === undefined ? [] : kept.segments.slice(0, held);
  const parts: Buffer[] = [];
  for (let i = start + covered; i < start + run; i++) {
    if (parts.length > 0 || covered > 0) parts.push(COMMA);
    parts.push(messageBytes(messages[i]));
  }
  segments.push({ bytes: Buffer.concat(parts), end: run });
  while (segments.length >= 2 && segments[segments.length - 2].bytes.length <= segments[segments.length - 1].bytes.length) {
    const last = segments.pop()!;
    const before = segments.pop()!;
    segments.push({ bytes: Buffer.concat([before.bytes, last.bytes]), end: last.end });
  }
  const block = { members: messages.slice(start, start + run), segments };
  blocks.set(messages[start], block);
  return block;
}

/** The first `held` segments of a block, as a block of their own (not kept: the longer one stays). */
function trimmed(messages: readonly ChatMessage[], start: number, block: Block, held: number): Block {
  const segments = block.segments.slice(0, held);
  return { members: messages.slice(start, start + segments[held - 1].end), segments };
}

function isLongSystemPrompt(message: ChatMessage): boolean {
  return (message.role === 'system' || message.role === 'developer') && message.content.length >= LONG_SYSTEM_CHARS;
}

/**
 * The last long system prompt's message and bytes. A client whose resent bytes are kept
 * (`util/interned-prefix.ts`) gets the same text object every request, here found by reference
 * (equal text is equal bytes: the message is its role and content alone).
 */
let lastSystemPrompt: { role: string; content: string; bytes: Buffer } | undefined;

/**
 * A long system prompt's bytes, kept by content: the key only finds the candidate (length and
 * opening), KeptJson compares the whole message before reuse.
 */
function systemPromptBytes(message: ChatMessage): Buffer {
  const content = message.content as string;
  const plain = Object.keys(message).length === 2;
  const last = lastSystemPrompt;
  if (plain && last !== undefined && last.content === content && last.role === message.role) return last.bytes;
  const bytes = keptSystemPrompts.get(`${content.length}\u0000${content.slice(0, 64)}`, message);
  if (plain) lastSystemPrompt = { role: message.role, content, bytes };
  return bytes;
}

/** A shared (frozen) message's bytes, kept by the message object. */
function messageBytes(message: ChatMessage): Buffer {
  let bytes = bytesOf.get(message);
  if (bytes === undefined) {
    bytes = utf8Bytes(JSON.stringify(message));
    bytesOf.set(message, bytes);
  }
  return bytes;
}
