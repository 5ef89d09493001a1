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
const decoder = new TextDecoder();

/**
 * Incremental SSE parser working on bytes, so a multi-byte UTF-8 character split across
 * chunks is never decoded in halves. Accepts LF, CR and CRLF line endings, comments and
 * the `event`/`data` fields; `id` and `retry` are ignored (no upstream we speak uses them).
 */
export class SseParser {
  private pending: Uint8Array = new Uint8Array(0);
  private eventType: string | undefined;
  private dataLines: string[] = [];
  private eventBytes = 0;
  private skipLeadingLf = false;

  constructor(private readonly maxEventBytes = 16 * 1024 * 1024) {}

  /** Feed bytes; returns the events completed by them. */
  push(chunk: Uint8Array): SseMessage[] {
    const out: SseMessage[] = [];
    let buf = chunk;
    if (this.pending.length > 0) {
      buf = new Uint8Array(this.pending.length + chunk.length);
      buf.set(this.pending, 0);
      buf.set(chunk, this.pending.length);
    }
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const byte = buf[i];
      if (byte !== LF && byte !== CR) continue;
      if (byte === LF && this.skipLeadingLf && i === start) {
        // second half of a CRLF split across chunks
        this.skipLeadingLf = false;
        start = i + 1;
        continue;
      }
      this.skipLeadingLf = false;
      this.processLine(buf.subarray(start, i), out);
      if (byte === CR) {
        if (i + 1 < buf.length) {
          if (buf[i + 1] === LF) i++;
        } else {
          this.skipLeadingLf = true;
        }
      }
      start = i + 1;
    }
    this.pending = start < buf.length ? buf.slice(start) : new Uint8Array(0);
    if (this.pending.length + this.eventBytes > this.maxEventBytes) {
      throw new SseEventTooLargeError(this.maxEventBytes);
    }
    return out;
  }

  /** End of stream: a last event without its blank line is dispatched, as browsers do not — but upstreams that forget it are common. */
  finish(): SseMessage[] {
    const out: SseMessage[] = [];
    if (this.pending.length > 0) {
      this.processLine(this.pending, out);
      this.pending = new Uint8Array(0);
    }
    this.dispatch(out);
    return out;
  }

  private processLine(line: Uint8Array, out: SseMessage[]): void {
    if (line.length === 0) {
      this.dispatch(out);
      return;
    }
    if (line[0] === 0x3a /* ':' comment */) return;
    const text = decoder.decode(line);
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') {
      this.dataLines.push(value);
      this.eventBytes += line.length;
      if (this.eventBytes > this.maxEventBytes) throw new SseEventTooLargeError(this.maxEventBytes);
    } else if (field === 'event') {
      this.eventType = value;
    }
  }

  private dispatch(out: SseMessage[]): void {
    if (this.dataLines.length > 0) {
      out.push({ event: this.eventType, data: this.dataLines.length === 1 ? this.dataLines[0] : this.dataLines.join('\n') });
    }
    this.eventType = undefined;
    this.dataLines = [];
    this.eventBytes = 0;
  }
}
