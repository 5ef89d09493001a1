import type { ChatRequest } from '../protocol/chat.js';

type ChatTools = NonNullable<ChatRequest['tools']>;

/** Tool lists kept (least recently used evicted): a few clients, each resending one list. */
const CAPACITY = 32;
/** A list serialising to more than this is sent but not kept (bounds the cache at ≈ 16 MB + its snapshots). */
const MAX_KEPT_BYTES = 512 * 1024;
/** Deeper than this, a list is treated as different (no unbounded recursion on hostile schemas). */
const MAX_DEPTH = 64;

interface KeptTools {
  /** What the bytes say, as plain JSON (`JSON.parse` of them): compared, never handed out. */
  snapshot: unknown;
  bytes: Buffer;
}

/** By the list's function names in order: a cheap key; the content is always compared in full. */
const kept = new Map<string, KeptTools>();

/**
 * The JSON bytes of an upstream request's `tools` array, exactly `JSON.stringify(tools)`. Clients
 * resend the same tools with every request (Codex: 9–12 tools, ≈ 18 KB) and a gateway tool loop
 * sends them every round, so the bytes of a list are kept and reused when a later list is the same
 * JSON — checked by walking it against the kept snapshot, which is far cheaper than serialising
 * it again. The bytes depend on nothing but the content, so one list's bytes serve any tenant.
 */
export function keptToolsBytes(tools: ChatTools): Buffer {
  let key = '';
  for (const tool of tools) key += `${tool.function?.name}\u0000`;
  const hit = kept.get(key);
  if (hit !== undefined && sameJson(tools, hit.snapshot, 0)) {
    // re-insert: Map keeps insertion order, so the first key is the least recently used
    kept.delete(key);
    kept.set(key, hit);
    return hit.bytes;
  }
  const text = JSON.stringify(tools);
  const bytes = Buffer.from(text);
  if (bytes.length <= MAX_KEPT_BYTES) {
    kept.delete(key);
    kept.set(key, { snapshot: JSON.parse(text), bytes });
    if (kept.size > CAPACITY) kept.delete(kept.keys().next().value!);
  }
  return bytes;
}

/**
 * Whether `JSON.stringify(value)` is the text `snapshot` was parsed from. Conservative: anything
 * `JSON.stringify` would transform (`toJSON`, non-finite numbers, `undefined` in an array, class
 * instances) counts as different, so the list is serialised again.
 */
function sameJson(value: unknown, snapshot: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value === snapshot;
    case 'number':
      return Number.isFinite(value) && value === snapshot;
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null || snapshot === null) return value === snapshot;
  if (typeof snapshot !== 'object' || depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    if (!Array.isArray(snapshot) || value.length !== snapshot.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameJson(value[i], snapshot[i], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(snapshot)) return false;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === 'function') return false;
  const snapshotKeys = Object.keys(snapshot);
  let at = 0;
  for (const key of Object.keys(object)) {
    const member = object[key];
    // left out by JSON.stringify, so absent from the snapshot
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    if (snapshotKeys[at] !== key || !sameJson(member, (snapshot as Record<string, unknown>)[key], depth + 1)) return false;
    at++;
  }
  return at === snapshotKeys.length;
}
