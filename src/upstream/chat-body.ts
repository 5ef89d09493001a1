import type { ChatMessage, ChatRequest } from '../protocol/chat.js';
import { aroundHole } from '../util/kept-json.js';
import { keptToolsBytes } from './kept-tools.js';

/** Below this many shared messages one `JSON.stringify` is cheaper than assembling kept bytes. */
const MIN_SHARED_MESSAGES = 8;
/** Shared messages sent one by one after a block before they are merged into a longer block. */
const REBLOCK_AFTER = 32;
const MESSAGES_OPEN = '"messages":[';
const TOOLS_HOLE = '"tools":[]';
const COMMA = Buffer.from(',');

/** The JSON bytes of one shared (frozen) message, serialised once. */
const bytesOf = new WeakMap<ChatMessage, Buffer>();

/** The first `count` messages of a run of shared messages, serialised and joined by commas. */
interface Block {
  /** The messages it holds: a block is used only where the request has exactly these. */
  members: readonly ChatMessage[];
  bytes: Buffer;
}
/** Blocks by the run's first message (a conversation's first stored message). */
const blocks = new WeakMap<ChatMessage, Block>();

/**
 * A chat request as the bytes sent upstream: exactly `JSON.stringify(request)`, as one string or
 * as a few large chunks. Frozen messages are a conversation's shared history (`encodeChatMessages`
 * keeps one message object per stored item, the same object every turn): their bytes are kept,
 * and a run of them is kept joined as a block that grows every `REBLOCK_AFTER` messages, so a turn
 * continued from a long `previous_response_id` chain neither serialises nor copies its whole
 * history again (issue 16) — the chunks go to the socket as they are.
 */
export function chatRequestBody(request: ChatRequest): string | Buffer[] {
  const { messages } = request;
  let shared = 0;
  for (const message of messages) if (Object.isFrozen(message)) shared++;
  // the tools' bytes are kept across requests and rounds (kept-tools.ts), and sent as they are
  const tools = request.tools !== undefined && request.tools.length > 0 ? keptToolsBytes(request.tools) : undefined;
  if (shared < MIN_SHARED_MESSAGES) {
    if (tools === undefined) return JSON.stringify(request);
    const split = withTools(JSON.stringify({ ...request, tools: [] }), tools);
    return split ?? JSON.stringify(request);
  }

  // the request without its messages (and tools), split where they go (a string value cannot hold
  // the unescaped `"messages":[`, so the first occurrence is the key)
  const shell = JSON.stringify(tools === undefined ? { ...request, messages: [] } : { ...request, messages: [], tools: [] });
  const at = shell.indexOf(MESSAGES_OPEN) + MESSAGES_OPEN.length;
  const chunks: Buffer[] = [];
  let pieces: Buffer[] = [Buffer.from(shell.slice(0, at))];
  for (let i = 0; i < messages.length; ) {
    if (i > 0) pieces.push(COMMA);
    const block = Object.isFrozen(messages[i]) ? blockAt(messages, i) : undefined;
    if (block) {
      chunks.push(Buffer.concat(pieces), block.bytes);
      pieces = [];
      i += block.members.length;
    } else {
      pieces.push(messageBytes(messages[i]));
      i++;
    }
  }
  const tail = shell.slice(at);
  if (tools === undefined) {
    pieces.push(Buffer.from(tail));
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
  return sides && [Buffer.from(sides[0]), tools, Buffer.from(sides[1])];
}

/** The block for the run of shared messages starting at `start`, made or grown when worth it. */
function blockAt(messages: readonly ChatMessage[], start: number): Block | undefined {
  let run = 1;
  while (start + run < messages.length && Object.isFrozen(messages[start + run])) run++;
  let block = blocks.get(messages[start]);
  if (block !== undefined && !holds(messages, start, run, block)) block = undefined;
  const covered = block?.members.length ?? 0;
  if (run - covered >= REBLOCK_AFTER) {
    const parts: Buffer[] = block ? [block.bytes] : [];
    for (let i = start + covered; i < start + run; i++) {
      if (parts.length > 0) parts.push(COMMA);
      parts.push(messageBytes(messages[i]));
    }
    block = { members: messages.slice(start, start + run), bytes: Buffer.concat(parts) };
    blocks.set(messages[start], block);
  }
  return block;
}

/** Whether the run of `run` messages at `start` begins with exactly the block's messages. */
function holds(messages: readonly ChatMessage[], start: number, run: number, block: Block): boolean {
  const { members } = block;
  if (members.length > run) return false;
  for (let i = members.length - 1; i >= 0; i--) if (messages[start + i] !== members[i]) return false;
  return true;
}

function messageBytes(message: ChatMessage): Buffer {
  if (!Object.isFrozen(message)) return Buffer.from(JSON.stringify(message));
  let bytes = bytesOf.get(message);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(message));
    bytesOf.set(message, bytes);
  }
  return bytes;
}
