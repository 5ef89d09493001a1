import { isDeepStrictEqual } from 'node:util';
import { deepFreeze } from './freeze.js';
import { jsonValueEnd, MemberName, newSentinel, parseSpliced } from './json-bytes.js';

/** How many bodies of one list (by its names) are parsed in full before the list is kept. */
const SIGHTINGS_BEFORE_KEEPING = 2;
/**
 * How often lists of the same names are kept: one whose bytes keep changing (a date in a
 * description) is not found and parsed again on every other request.
 */
const MAX_KEPT_PER_NAMES = 3;
/** How many more places a kept list is found at (bodies whose lengths before and after it both change are not followed). */
const MAX_PLACES_PER_NAMES = 16;

interface Kept {
  /** The member's value as the client sent it (UTF-8 JSON, its spacing included). */
  bytes: Buffer;
  /** `JSON.parse` of `bytes`, frozen (`intern`): every request that sends these bytes gets this value. */
  value: unknown;
  /** Where the bytes were in the last body that sent them: from its start, and from its end to theirs. */
  fromStart: number;
  fromEnd: number;
}

/**
 * A top-level member of client JSON bodies that clients send again byte for byte with every
 * request, parsed once: an agent's tool list (Codex: 9–12 tools, ≈ 18 KB of JSON schemas, on every
 * turn; more than half of what `JSON.parse` spends on its 47 KB request).
 *
 * Finding it costs next to nothing: a kept list is looked for where it was in the last body that
 * sent it, counted from the start (a client that sends `tools` before a growing `input`) and from
 * the end (Codex sends it after), which is a few byte comparisons; a body holding none of them is
 * never searched. A body holding a kept list's exact bytes there is parsed with a sentinel in
 * their place — a string with a random nonce no client can send — and the kept value is put where
 * the sentinel landed. That the sentinel came back as the body's own top-level member (the last
 * one, as `JSON.parse` keeps) proves the bytes were that member's value: the body is the parsed
 * text with one whole JSON value replaced by another, so parsing it as it is would give the same
 * object with that member `JSON.parse(bytes)`. Anything else (the bytes sat in a nested object,
 * the spliced text does not parse) parses the body as it is, as a body with no kept list does.
 *
 * A list is kept once bodies with the same names in it were parsed twice (so a client that sends a
 * new list every time pays nothing but a names key): its bytes are found in the body then (any
 * spacing), parsed, and checked to be the body's member. Kept values are frozen and shared by every
 * request and tenant that sends the same bytes (the value depends on the bytes alone); code that
 * tried to change one would throw. Least recently used lists are evicted.
 */
export class InternedMember {
  private readonly key: string;
  private readonly name: MemberName;
  private readonly sentinel = newSentinel();
  private readonly sentinelBytes: Buffer;
  /** Most recently used first. */
  private readonly kept: Kept[] = [];
  private keptBytes = 0;
  /** Lists by their names: bodies parsed in full before keeping, how often kept and found at another place (cleared when full). */
  private readonly seen = new Map<string, { sightings: number; kept: number; places: number }>();

  /** `limits`: a list is kept when its JSON has `minBytes` to `maxBytes` bytes; `count` lists of `totalBytes` at most. */
  constructor(
    key: string,
    private readonly limits: { minBytes: number; maxBytes: number; count: number; totalBytes: number },
  ) {
    this.key = key;
    this.name = new MemberName(key);
    this.sentinelBytes = Buffer.from(JSON.stringify(this.sentinel), 'latin1');
  }

  /**
   * `parse(body)` (the caller's decoding, `JSON.parse` and checks), with a kept list taken as it is
   * instead of parsed again.
   */
  parse(body: Buffer, parse: (body: Buffer) => unknown): unknown {
    if (body.length < this.limits.minBytes) return parse(body);
    for (let i = 0; i < this.kept.length; i++) {
      const kept = this.kept[i];
      let start = kept.fromStart;
      if (!this.holds(body, start, kept)) {
        start = body.length - kept.fromEnd - kept.bytes.length;
        if (!this.holds(body, start, kept)) continue;
      }
      return this.parseAround(body, start, i, parse);
    }
    const value = parse(body);
    this.learn(body, value, parse);
    return value;
  }

  /** Whether `body` has `"key":` and then `kept`'s bytes at `start`. */
  private holds(body: Buffer, start: number, kept: Kept): boolean {
    const end = start + kept.bytes.length;
    return end <= body.length && this.name.endsAt(body, start) && body.compare(kept.bytes, 0, kept.bytes.length, start, end) === 0;
  }

  private parseAround(body: Buffer, start: number, index: number, parse: (body: Buffer) => unknown): unknown {
    const kept = this.kept[index];
    const end = start + kept.bytes.length;
    const value = parseSpliced(body, start, end, this.sentinelBytes, parse);
    if (value === undefined) return parse(body);
    if (!isObject(value) || value[this.key] !== this.sentinel) return parse(body);
    value[this.key] = kept.value;
    kept.fromStart = start;
    kept.fromEnd = body.length - end;
    if (index > 0) {
      this.kept.splice(index, 1);
      this.kept.unshift(kept);
    }
    return value;
  }

  /**
   * Counts a list by its names; at the second sighting — at once for a list of names kept before,
   * seen at a place of its own (another session's body) — keeps it if its bytes are found whole as
   * the body's member.
   */
  private learn(body: Buffer, value: unknown, parse: (body: Buffer) => unknown): void {
    if (!isObject(value)) return;
    const member = value[this.key];
    if (!Array.isArray(member) || member.length === 0) return;
    const names = namesOf(member);
    let seen = this.seen.get(names);
    if (seen === undefined) {
      if (this.seen.size >= 1024) this.seen.clear();
      seen = { sightings: 0, kept: 0, places: 0 };
      this.seen.set(names, seen);
    }
    if (seen.kept >= MAX_KEPT_PER_NAMES || seen.places >= MAX_PLACES_PER_NAMES) return;
    if (seen.kept === 0 && ++seen.sightings < SIGHTINGS_BEFORE_KEEPING) return;
    const kept = this.find(body, member, parse);
    // not found whole as the body's member: not looked for again
    if (kept === undefined) seen.kept = MAX_KEPT_PER_NAMES;
    else {
      if (this.kept.some((other) => other.value === kept.value)) seen.places++;
      else seen.kept++;
      this.keep(kept);
      // this request too: one value for every request that sends these bytes
      value[this.key] = kept.value;
    }
  }

  /**
   * The body's member as its bytes (the first occurrences of `"key":` are tried) and their parsed
   * value — a kept list's own bytes and value when it is one (kept again at this place).
   */
  private find(body: Buffer, member: unknown[], parse: (body: Buffer) => unknown): Kept | undefined {
    let at = -1;
    for (let n = 0; n < 4; n++) {
      at = body.indexOf(this.name.bytes, at + 1);
      if (at < 0) return undefined;
      const start = at + this.name.bytes.length;
      const end = jsonValueEnd(body, start);
      if (end - start < this.limits.minBytes || end - start > this.limits.maxBytes) continue;
      const place = { fromStart: start, fromEnd: body.length - end };
      const sent = body.subarray(start, end);
      const known = this.kept.find((kept) => kept.bytes.equals(sent));
      if (known !== undefined) {
        if (isDeepStrictEqual(known.value, member)) return { ...place, bytes: known.bytes, value: known.value };
        continue;
      }
      let value: unknown;
      try {
        value = parse(sent);
      } catch {
        continue;
      }
      // the body's own member (checked with the body, at its depth), not a nested list;
      // its bytes copied: a kept list does not hold the body's memory
      if (isDeepStrictEqual(value, member)) return { ...place, bytes: Buffer.from(sent), value: intern(value) };
    }
    return undefined;
  }

  private keep(kept: Kept): void {
    this.kept.unshift(kept);
    this.keptBytes += kept.bytes.length;
    while (this.kept.length > this.limits.count || this.keptBytes > this.limits.totalBytes) this.keptBytes -= this.kept.pop()!.bytes.length;
  }
}

/** A list's names in order (`type:name`), telling lists apart cheaply. */
function namesOf(list: unknown[]): string {
  let names = '';
  for (const item of list) names += isObject(item) ? `${String(item.type)}:${String(item.name)}\u0000` : '?\u0000';
  return names;
}

/** Every object of every kept value (parsed JSON, frozen): they never change. */
const internedObjects = new WeakSet<object>();

/** Whether `value` is (inside) a kept value: JSON as parsed, deeply frozen, shared by the requests that send it. */
export function isInterned(value: object): boolean {
  return internedObjects.has(value);
}

/** `value` (parsed JSON) frozen, its objects recorded as interned. */
export function intern<T>(value: T): T {
  return deepFreeze(value, recordInterned);
}

function recordInterned(object: object): void {
  internedObjects.add(object);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
