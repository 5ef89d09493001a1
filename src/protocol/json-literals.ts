/**
 * JSON literals read in place, inside a longer text, without `JSON.parse` of the whole: the end of
 * a string or an integer literal at a position, and its value. For the chunk reader's holes
 * (`chat-chunk-reader.ts`): what these accept is exactly what `JSON.parse` reads as one string, or
 * as the digits `JSON.stringify` writes for a plain integer; anything else is left to it.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ZERO = 0x30;
const NINE = 0x39;
/** Digits a plain integer hole holds at most (`isPlainInteger`). */
const MAX_DIGITS = 15;

/**
 * What the last `stringEnd` or `integerEnd` found besides the literal's end: whether the string
 * has a backslash in it, the integer's value (read as it is scanned: no slice, no conversion).
 */
export const scanned = { escaped: false, integer: 0 };

/**
 * The end (after the closing quote) of the JSON string literal at `start`, or −1: an opening quote,
 * then characters up to the first quote no backslash escapes, none of them a control character.
 */
export function stringEnd(data: string, start: number): number {
  scanned.escaped = false;
  if (data.charCodeAt(start) !== QUOTE) return -1;
  for (let i = start + 1; i < data.length; i++) {
    const code = data.charCodeAt(i);
    if (code === QUOTE) return i + 1;
    if (code === BACKSLASH) {
      scanned.escaped = true;
      i++;
    } else if (code < 0x20) return -1;
  }
  return -1;
}

/**
 * The string the literal `data[start, end)` (from `stringEnd`) is, or null when its escapes are not
 * JSON. A literal without escapes is its characters between the quotes (`JSON.parse` would also put
 * a short one in V8's string table, a hash lookup per token).
 */
export function stringValue(data: string, start: number, end: number, hasEscapes: boolean): string | null {
  if (!hasEscapes) return data.slice(start + 1, end - 1);
  try {
    return JSON.parse(data.slice(start, end)) as string;
  } catch {
    return null;
  }
}

/**
 * The end of the integer at `start` written as `JSON.stringify` writes a plain integer (`0`, or up
 * to 15 digits without a leading zero), or −1. A fraction or an exponent after it does not fit the
 * fixed text that follows.
 */
export function integerEnd(data: string, start: number): number {
  let end = start;
  let value = 0;
  while (end - start <= MAX_DIGITS) {
    const code = data.charCodeAt(end);
    if (!(code >= ZERO && code <= NINE)) break;
    // exact: 15 digits stay below 2^53
    value = value * 10 + (code - ZERO);
    end++;
  }
  scanned.integer = value;
  const digits = end - start;
  if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && data.charCodeAt(start) === ZERO)) return -1;
  return end;
}

/** A number `JSON.stringify` writes as digits alone, that `integerEnd` reads back (at most `MAX_DIGITS` of them). */
export function isPlainInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < 1e15 && !Object.is(value, -0);
}
