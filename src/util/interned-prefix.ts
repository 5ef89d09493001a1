import { intern, isObject } from './interned-member.js';
import { leadingShared, withSharedLength } from './kept-runs.js';
import { arrayCloseFrom, CLOSE_BRACKET, COMMA, MemberName, newSentinel, parseSpliced, skipSpace, trimEnd } from './json-bytes.js';

/** How many bodies with the same opening of the array are parsed in full before its prefix is kept. */
const SIGHTINGS_BEFORE_KEEPING = 2;
/** How many bytes after `"key":` tell bodies of one conversation apart from others. */
const OPENING_BYTES = 256;
/** Bytes compared at the end of a kept prefix first: conversations that share their opening differ there. */
const TAIL_BYTES = 32;
/**
 * How many items at the end of a kept prefix may come back changed, the items before them kept:
 * Claude Code marks its newest message with `cache_control` and takes the mark off the turn after.
 */
const CHANGEABLE_TAIL = 2;

interface KeptPrefix {
  /** `[item1,…,itemK` as the client sent it (a view into the last body that sent it). */
  bytes: Buffer;
  /** The K items, parsed and frozen (`intern`). */
  items: readonly unknown[];
  /** How many of them lead as shared objects (`util/kept-runs.ts`): all, but in a body that is no request. */
  shared: number;
  /** Where the bytes were in that body, from its start. */
  fromStart: number;
  /**
   * Where the last CHANGEABLE_TAIL items are cut off (the lengths of `bytes` without them, each up
   * to the comma before an item), oldest first: the shorter prefixes a body is looked at for.
   */
  cuts: readonly number[];
}

/**
 * The items at the start of a top-level array member that clients resend with every request,
 * parsed once: a coding agent's whole history (`input`), resent on every turn by a client that
 * stores nothing (Codex over HTTP with `store: false`), so that a turn parses what is new only.
 *
 * As `InternedMember` does for a whole value: a kept prefix `[item1,…,itemK` is looked for where
 * the last body had it, followed by `,` or `]`; it is replaced by `["<sentinel>"` before
 * `JSON.parse`, and the kept items take the sentinel's place only if the sentinel comes back as
 * the first item of the body's top-level member: the body is then the parsed text with one item
 * swapped for K whole items, so parsing it as sent gives the same array with them in front.
 * Anything else parses the body as sent. The new items, found from the end of the kept prefix to
 * the array's close (bytes read once), extend the kept prefix for the next turn. A body whose last
 * kept item or two came back changed (a client's cache mark moved on to its newest message) is
 * looked at for the kept prefix without them. A conversation's prefix is kept once two bodies
 * opened the array alike; the items are frozen and shared.
 */
export class InternedPrefix {
  private readonly key: string;
  private readonly name: MemberName;
  private readonly sentinel = newSentinel();
  /** `["<sentinel>"`, in place of kept items, and `["<sentinel>"]`, in place of a whole array. */
  private readonly opening: Buffer;
  private readonly wholeArray: Buffer;
  /** Most recently used first. */
  private readonly kept: KeptPrefix[] = [];
  private keptBytes = 0;
  /** Bodies parsed in full, by the array's opening bytes (cleared when full). */
  private readonly seen = new Map<string, number>();

  /** `limits`: a prefix is kept from `minBytes` to `maxBytes` bytes; `count` of them (conversations), `totalBytes` in all. */
  constructor(
    key: string,
    private readonly limits: { minBytes: number; maxBytes: number; count: number; totalBytes: number },
  ) {
    this.key = key;
    this.name = new MemberName(key);
    this.opening = Buffer.from(`[${JSON.stringify(this.sentinel)}`, 'latin1');
    this.wholeArray = Buffer.from(`[${JSON.stringify(this.sentinel)}]`, 'latin1');
  }

  parse(body: Buffer, parse: (body: Buffer) => unknown): unknown {
    if (body.length < this.limits.minBytes) return parse(body);
    for (let i = 0; i < this.kept.length; i++) {
      const kept = this.kept[i];
      if (this.holds(body, kept, kept.bytes.length)) return this.parseAround(body, i, kept.items.length, kept.bytes.length, parse);
      for (let dropped = 1; dropped <= kept.cuts.length; dropped++) {
        const cut = kept.cuts[kept.cuts.length - dropped];
        if (this.holds(body, kept, cut)) return this.parseAround(body, i, kept.items.length - dropped, cut, parse);
      }
    }
    const value = parse(body);
    this.learn(body, value, parse);
    return value;
  }

  /** Whether `body` has `"key":`, the first `length` kept bytes, and then `,` or `]` at the kept place. */
  private holds(body: Buffer, kept: KeptPrefix, length: number): boolean {
    const start = kept.fromStart;
    const end = start + length;
    if (end >= body.length || !this.name.endsAt(body, start)) return false;
    const tail = Math.min(TAIL_BYTES, length);
    if (body.compare(kept.bytes, length - tail, length, end - tail, end) !== 0) return false;
    if (body.compare(kept.bytes, 0, length, start, end) !== 0) return false;
    const next = body[skipSpace(body, end)];
    return next === COMMA || next === CLOSE_BRACKET;
  }

  /** `body` parsed with its first `count` items (`length` bytes) taken as kept. */
  private parseAround(body: Buffer, index: number, count: number, length: number, parse: (body: Buffer) => unknown): unknown {
    const kept = this.kept[index];
    const start = kept.fromStart;
    const end = start + length;
    const value = parseSpliced(body, start, end, this.opening, parse);
    if (value === undefined) return parse(body);
    const member = isObject(value) ? value[this.key] : undefined;
    if (!Array.isArray(member) || member[0] !== this.sentinel) return parse(body);
    const added = member.slice(1);
    const keptItems = count === kept.items.length ? kept.items : kept.items.slice(0, count);
    const items = added.length === 0 ? keptItems : keptItems.concat(added);
    const sent = items.slice();
    (value as Record<string, unknown>)[this.key] = sent;
    let shared = Math.min(kept.shared, count);
    if (added.length > 0) {
      // the kept prefix grows by the new items, read from where it ended to the array's close
      const commas: number[] = [];
      const close = arrayCloseFrom(body, end, commas);
      if (close > 0 && close - start <= this.limits.maxBytes) {
        for (const item of added) intern(item);
        if (shared === count) shared = leadingShared(items, count);
        // the cuts before the kept bytes' end, then the commas read (the first one right at that end)
        const cuts = kept.cuts.filter((cut) => cut < length);
        const grown = { bytes: body.subarray(start, trimEnd(body, start, close)), items, shared, fromStart: start, cuts: lastCuts(body, start, cuts, commas) };
        this.keptBytes += grown.bytes.length - kept.bytes.length;
        this.kept[index] = grown;
      }
    }
    if (index > 0) this.kept.unshift(...this.kept.splice(index, 1));
    this.evict();
    // the array's stages (checks, storable forms, model items) look no further than these
    withSharedLength(sent, shared);
    return value;
  }

  /** Keeps the body's array as a prefix once two bodies opened it alike (the second one's). */
  private learn(body: Buffer, value: unknown, parse: (body: Buffer) => unknown): void {
    if (!isObject(value)) return;
    const member = value[this.key];
    if (!Array.isArray(member) || member.length === 0) return;
    const at = body.indexOf(this.name.bytes);
    if (at < 0) return;
    const start = at + this.name.bytes.length;
    const opening = body.toString('latin1', start, start + OPENING_BYTES);
    const sightings = (this.seen.get(opening) ?? 0) + 1;
    if (sightings < SIGHTINGS_BEFORE_KEEPING) {
      if (this.seen.size >= 1024) this.seen.clear();
      this.seen.set(opening, sightings);
      return;
    }
    this.seen.delete(opening);
    const open = skipSpace(body, start);
    if (body[open] !== OPEN_BRACKET) return;
    const commas: number[] = [];
    const close = arrayCloseFrom(body, open + 1, commas);
    const end = close + 1;
    if (close < 0 || end - start < this.limits.minBytes || end - start > this.limits.maxBytes) return;
    // the bytes are the body's own member (not a nested one) when a sentinel in their place comes back as it
    const check = parseSpliced(body, start, end, this.wholeArray, parse);
    const probed = isObject(check) ? check[this.key] : undefined;
    if (!Array.isArray(probed) || probed.length !== 1 || probed[0] !== this.sentinel) return;
    const items = member.map((item) => intern(item));
    const shared = leadingShared(items);
    value[this.key] = withSharedLength(items.slice(), shared);
    const kept = { bytes: body.subarray(start, trimEnd(body, start, close)), items, shared, fromStart: start, cuts: lastCuts(body, start, [], commas) };
    this.kept.unshift(kept);
    this.keptBytes += kept.bytes.length;
    this.evict();
  }

  private evict(): void {
    while (this.kept.length > this.limits.count || this.keptBytes > this.limits.totalBytes) this.keptBytes -= this.kept.pop()!.bytes.length;
  }
}

const OPEN_BRACKET = 0x5b;

/**
 * The last CHANGEABLE_TAIL cuts of a kept prefix: `earlier` (lengths already known) followed by
 * those of `commas` (indexes in `body` of the commas between the array's items), each the length
 * from `start` to the end of the item before it.
 */
function lastCuts(body: Buffer, start: number, earlier: number[], commas: readonly number[]): number[] {
  const cuts = earlier;
  for (let i = Math.max(0, commas.length - CHANGEABLE_TAIL); i < commas.length; i++) cuts.push(trimEnd(body, start, commas[i]) - start);
  return cuts.length > CHANGEABLE_TAIL ? cuts.slice(-CHANGEABLE_TAIL) : cuts;
}
