// UTF-8 at the edges, for long text: with wide characters, and all ASCII.
//
// Node 20 converts between UTF-8 bytes and a string that holds a character above U+00FF (a
// typographic quote or dash, an arrow, any CJK) at 1.2–2 ns per character: a Codex request of
// 47 KB with some seventy of them takes 60–100 µs to decode and its upstream request as long to
// encode, about what `JSON.parse` takes to read it. ICU's converters (`buffer.transcode`) do the same
// conversion 3–5 × faster from a few KB up; below that the fixed cost of a conversion wins
// (bench/utf8.mjs has the figures). Long ASCII text is encoded as its Latin-1 bytes, a copy. The
// results are the same bytes and the same strings.
import { isAscii, isUtf8, transcode } from 'node:buffer';

/** Below this many characters (bytes) Node's own conversion is as fast. */
const LONG = 4096;
/**
 * Above this many characters (bytes) the conversion keeps to Node's way: ICU's needs a UTF-16
 * copy of the whole text besides the result, and at that size the memory matters more than the time.
 */
const LONGEST = 8 * 1024 * 1024;

/**
 * A character a one-byte string cannot hold. On a one-byte string V8 answers without reading it,
 * so only a string that may hold one is searched.
 */
const WIDE = /[^\x00-\xff]/;

/**
 * `text` as it is best handed to a socket (`res.write`, a request body, a WebSocket frame):
 * itself, or, for a long text, its UTF-8 bytes — exactly `Buffer.from(text)`.
 */
export function wireText(text: string): string | Buffer {
  if (text.length < LONG || text.length > LONGEST) return text;
  if (!WIDE.test(text)) return asciiBytes(text) ?? text;
  try {
    return transcode(Buffer.from(text, 'ucs2'), 'ucs2', 'utf8');
  } catch {
    // a lone surrogate (never in JSON.stringify's output), or a Node built without ICU: Node's way (U+FFFD for the surrogate)
    return Buffer.from(text);
  }
}

/**
 * The bytes of a text with no wide character when it is all ASCII (then its Latin-1 bytes are its
 * UTF-8 bytes), else undefined. A copy and a SIMD check take half of what Node's UTF-8 encoder
 * takes for a long one-byte string (bench/utf8.mjs: 64 KB in 7.1 µs against 14.2): a stream's
 * events that echo a long tool list (Codex: ≈ 18 KB, three times per response) are such text.
 */
function asciiBytes(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'latin1');
  return isAscii(bytes) ? bytes : undefined;
}

/** Exactly `Buffer.from(text)` (UTF-8), converted the faster way (`wireText`). */
export function utf8Bytes(text: string): Buffer {
  const wire = wireText(text);
  return typeof wire === 'string' ? Buffer.from(wire) : wire;
}

/** Exactly `bytes.toString('utf8')` (invalid sequences become U+FFFD), converted the faster way. */
export function utf8Text(bytes: Buffer): string {
  if (bytes.length < LONG || bytes.length > LONGEST) return bytes.toString('utf8');
  // pure ASCII reads as Latin-1 byte for byte, with no decoding at all
  if (isAscii(bytes)) return bytes.toString('latin1');
  // only valid UTF-8 takes ICU's way: invalid bytes are replaced as V8 replaces them
  if (!isUtf8(bytes)) return bytes.toString('utf8');
  try {
    return transcode(bytes, 'utf8', 'ucs2').toString('ucs2');
  } catch {
    // a Node built without ICU has no transcode
    return bytes.toString('utf8');
  }
}
