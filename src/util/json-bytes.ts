// Reading JSON from its bytes without parsing it: a member's name before a value, where a value
// ends, where an array closes, whitespace; and splicing a sentinel in. For finding a value a client
// sent again (util/interned-member.ts, interned-prefix.ts).
import { randomUUID } from 'node:crypto';

const QUOTE = 0x22;
const COLON = 0x3a;
export const COMMA = 0x2c;
export const CLOSE_BRACKET = 0x5d;

/** `"name":` as bytes, found right before a value. */
export class MemberName {
  readonly bytes: Buffer;

  constructor(name: string) {
    this.bytes = Buffer.from(`${JSON.stringify(name)}:`, 'latin1');
  }

  /** Whether `body` has the name right before `start` (colon and quote first: nearly every other body fails there). */
  endsAt(body: Buffer, start: number): boolean {
    return (
      start >= this.bytes.length &&
      body[start - 1] === COLON &&
      body[start - 2] === QUOTE &&
      body.compare(this.bytes, 0, this.bytes.length, start - this.bytes.length, start) === 0
    );
  }
}

/** A string no client can send (a random nonce): put in place of kept bytes, it shows where they were. */
export function newSentinel(): string {
  return `\u0000switchyard:${randomUUID()}`;
}

/** `bytes` with `[start, end)` replaced by `inserted`. */
export function splice(bytes: Buffer, start: number, end: number, inserted: Buffer): Buffer {
  return Buffer.concat([bytes.subarray(0, start), inserted, bytes.subarray(end)], bytes.length - (end - start) + inserted.length);
}

/**
 * `parse` of `body` with `[start, end)` replaced by `inserted`, or undefined when that text does
 * not parse — then the body's own error (or value) is what counts, and the caller parses it as sent.
 */
export function parseSpliced(body: Buffer, start: number, end: number, inserted: Buffer, parse: (body: Buffer) => unknown): unknown {
  try {
    return parse(splice(body, start, end, inserted));
  } catch {
    return undefined;
  }
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** The index of the first byte from `from` on that is not JSON whitespace. */
export function skipSpace(bytes: Buffer, from: number): number {
  let i = from;
  while (i < bytes.length && isSpace(bytes[i])) i++;
  return i;
}

/** `end` moved back over JSON whitespace (not before `start`). */
export function trimEnd(bytes: Buffer, start: number, end: number): number {
  let i = end;
  while (i > start && isSpace(bytes[i - 1])) i--;
  return i;
}

/**
 * Where the JSON array or object starting at `start` (after optional whitespace) ends: the index
 * after its closing bracket, or `start` when there is none there or it does not end.
 */
export function jsonValueEnd(bytes: Buffer, start: number): number {
  const open = skipSpace(bytes, start);
  if (bytes[open] !== 0x5b && bytes[open] !== 0x7b) return start;
  const close = closingFrom(bytes, open + 1);
  return close < 0 ? start : close + 1;
}

/**
 * Where the array whose items continue at `from` (after an item, inside the array) closes: the
 * index of its `]`, or -1 when it does not close.
 */
export function arrayCloseFrom(bytes: Buffer, from: number, commas?: number[]): number {
  const close = closingFrom(bytes, from, commas);
  return close >= 0 && bytes[close] === CLOSE_BRACKET ? close : -1;
}

/**
 * The index of the `]` or `}` that closes what `from` is inside of (strings and nested values
 * skipped), or -1; `commas` gets the indexes of the commas between its members (not nested ones).
 */
function closingFrom(bytes: Buffer, from: number, commas?: number[]): number {
  let depth = 0;
  for (let i = from; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      // a string: on to its closing quote (an escaped character is skipped with its backslash)
      for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === 0x5c) i++;
    } else if (byte === 0x5b || byte === 0x7b) depth++;
    else if (byte === 0x5d || byte === 0x7d) {
      if (depth === 0) return i;
      depth--;
    } else if (byte === COMMA && depth === 0 && commas !== undefined) commas.push(i);
  }
  return -1;
}
