/**
 * Server-Sent Events framing: one strict writer and one byte-level parser.
 * https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */

/** One event as a single string (written with one `write` call): `event:` line plus one `data:` line. */
export function encodeSseEvent(type: string, payloadJson: string): string {
  return `event: ${type}\ndata: ${payloadJson}\n\n`;
}

/** A data-only event, as Chat Completions servers send them. */
export function encodeSseData(payloadJson: string): string {
  return `data: ${payloadJson}\n\n`;
}

export interface SseMessage {
  event: string | undefined;
  data: string;
}

export class SseEventTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`SSE event exceeds ${limitBytes} bytes`);
  }
}

const LF = 0x0a;
const CR = 0x0d;
const EMPTY = Buffer.alloc(0);
const DATA = Buffer.from('data');
const EVENT = Buffer.from('event');

/** Whether the line's field name (`buf[start, end)`) is `name`: compared as bytes, without decoding it (a line per token). */
function isField(buf: Buffer, start: number, end: number, name: Buffer): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (buf[start + i] !== name[i]) return false;
  return true;
}

/**
 * Incremental SSE parser working on bytes, so a multi-byte UTF-8 character split across
 * chunks is never decoded in halves. Accepts LF, CR and CRLF line endings, comments and
 * the `event`/`data` fields; `id` and `retry` are ignored (no upstream we speak uses them).
 * Lines are found with native `indexOf` and decoded straight from the chunk (the hot path).
 */
export class SseParser {
  private pending: Buffer = EMPTY;
  private eventType: string | undefined;
  /** The event's data so far (lines joined by LF); null until a `data` line arrives. */
  private data: string | null = null;
  private eventBytes = 0;
  private skipLeadingLf = false;

  constructor(private readonly maxEventBytes = 16 * 1024 * 1024) {}

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array): SseMessage[] {
    const out: SseMessage[] = [];
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.pending.length > 0) buf = Buffer.concat([this.pending, buf]);
    let start = 0;
    if (this.skipLeadingLf && buf.length > 0) {
      // second half of a CRLF split across chunks
      if (buf[0] === LF) start = 1;
      this.skipLeadingLf = false;
    }
    const hasCr = buf.indexOf(CR, start) !== -1;
    while (start < buf.length) {
      let end = buf.indexOf(LF, start);
      let next = end + 1;
      if (hasCr) {
        const cr = buf.indexOf(CR, start);
        if (cr !== -1 && (end === -1 || cr < end)) {
          end = cr;
          if (cr + 1 < buf.length) next = buf[cr + 1] === LF ? cr + 2 : cr + 1;
          else {
            next = cr + 1;
            this.skipLeadingLf = true;
          }
        }
      }
      if (end === -1) break;
      this.processLine(buf, start, end, out);
      start = next;
    }
    this.pending = start < buf.length ? Buffer.from(buf.subarray(start)) : EMPTY;
    if (this.pending.length + this.eventBytes > this.maxEventBytes) {
      throw new SseEventTooLargeError(this.maxEventBytes);
    }
    return out;
  }

  /** End of stream: a last event without its blank line is dispatched, as browsers do not — but upstreams that forget it are common. */
  finish(): SseMessage[] {
    const out: SseMessage[] = [];
    if (this.pending.length > 0) {
      this.processLine(this.pending, 0, this.pending.length, out);
      this.pending = EMPTY;
    }
    this.dispatch(out);
    return out;
  }

  private processLine(buf: Buffer, start: number, end: number, out: SseMessage[]): void {
    if (end === start) {
      this.dispatch(out);
      return;
    }
    if (buf[start] === 0x3a /* ':' comment */) return;
    let colon = buf.indexOf(0x3a, start);
    if (colon === -1 || colon > end) colon = end;
    let valueStart = colon + 1;
    if (valueStart < end && buf[valueStart] === 0x20) valueStart++;
    if (isField(buf, start, colon, DATA)) {
      const line = valueStart >= end ? '' : buf.toString('utf8', valueStart, end);
      this.data = this.data === null ? line : `${this.data}\n${line}`;
      this.eventBytes += end - start;
      if (this.eventBytes > this.maxEventBytes) throw new SseEventTooLargeError(this.maxEventBytes);
    } else if (isField(buf, start, colon, EVENT)) {
      this.eventType = valueStart >= end ? '' : buf.toString('utf8', valueStart, end);
    }
  }

  private dispatch(out: SseMessage[]): void {
    if (this.data !== null) out.push({ event: this.eventType, data: this.data });
    this.eventType = undefined;
    this.data = null;
    this.eventBytes = 0;
  }
}
