import { describe, expect, it } from 'vitest';
import { SseEventTooLargeError, SseParser, encodeSseData, encodeSseEvent, type SseMessage } from '../../src/protocol/sse.js';

const enc = new TextEncoder();
const bytes = (text: string): Uint8Array => enc.encode(text);

/** Feeds `chunks` (strings or raw bytes) and then finishes; returns every event. */
function parse(chunks: Array<string | Uint8Array>, parser = new SseParser()): SseMessage[] {
  const out: SseMessage[] = [];
  for (const chunk of chunks) out.push(...parser.push(typeof chunk === 'string' ? bytes(chunk) : chunk));
  out.push(...parser.finish());
  return out;
}

/** Every way of cutting `text` in two, plus one byte at a time: all must parse like the whole. */
function expectSplitInvariant(text: string, expected: SseMessage[]): void {
  const all = bytes(text);
  expect(parse([all])).toEqual(expected);
  for (let i = 0; i <= all.length; i++) {
    expect({ i, events: parse([all.subarray(0, i), all.subarray(i)]) }).toEqual({ i, events: expected });
  }
  const single: Uint8Array[] = [];
  for (let i = 0; i < all.length; i++) single.push(all.subarray(i, i + 1));
  expect(parse(single)).toEqual(expected);
}

describe('SseParser', () => {
  const twoEvents: SseMessage[] = [
    { event: undefined, data: '{"a":1}' },
    { event: undefined, data: '[DONE]' },
  ];

  it('parses LF line endings', () => {
    expectSplitInvariant('data: {"a":1}\n\ndata: [DONE]\n\n', twoEvents);
  });

  it('parses CRLF line endings', () => {
    expectSplitInvariant('data: {"a":1}\r\n\r\ndata: [DONE]\r\n\r\n', twoEvents);
  });

  it('parses CR line endings', () => {
    expectSplitInvariant('data: {"a":1}\r\rdata: [DONE]\r\r', twoEvents);
  });

  it('parses mixed line endings', () => {
    expectSplitInvariant('data: {"a":1}\r\n\ndata: [DONE]\r\r\n', twoEvents);
  });

  it('treats a CRLF split across chunks as one line ending', () => {
    const parser = new SseParser();
    expect(parser.push(bytes('data: x\r'))).toEqual([]);
    // the LF completing the CRLF is not a second (blank) line: nothing is dispatched yet
    expect(parser.push(bytes('\n'))).toEqual([]);
    expect(parser.push(bytes('data: y\r'))).toEqual([]);
    expect(parser.push(bytes('\n\r'))).toEqual([{ event: undefined, data: 'x\ny' }]);
    expect(parser.push(bytes('\n'))).toEqual([]);
    expect(parser.finish()).toEqual([]);
  });

  it('treats a CR at the end of a chunk followed by a CR as a blank line', () => {
    const parser = new SseParser();
    expect(parser.push(bytes('data: x\r'))).toEqual([]);
    expect(parser.push(bytes('\r'))).toEqual([{ event: undefined, data: 'x' }]);
  });

  it('ignores comments (keep-alives included)', () => {
    expectSplitInvariant(': keep-alive\n\n:ping\ndata: a\n: in the middle\ndata: b\n\n', [{ event: undefined, data: 'a\nb' }]);
  });

  it('joins multi-line data with \\n', () => {
    expectSplitInvariant('data: line one\ndata:line two\ndata\ndata:  indented\n\n', [{ event: undefined, data: 'line one\nline two\n\n indented' }]);
  });

  it('captures event: and resets it after each dispatch', () => {
    expectSplitInvariant('event: response.created\ndata: {"x":1}\n\ndata: {"y":2}\n\nevent:error\ndata: {}\n\n', [
      { event: 'response.created', data: '{"x":1}' },
      { event: undefined, data: '{"y":2}' },
      { event: 'error', data: '{}' },
    ]);
  });

  it('ignores id:, retry: and unknown fields; does not dispatch an event without data', () => {
    expectSplitInvariant('id: 7\nretry: 1000\nfoo: bar\n\nevent: lonely\n\nid: 8\ndata: kept\n\n', [{ event: undefined, data: 'kept' }]);
  });

  it('matches field names exactly: near misses of data / event (and a field line without a colon) are ignored', () => {
    expectSplitInvariant('datum: x\ndata2: y\nDATA: z\ndat: w\nevents: e\nEvent: f\ndata\n\nevent\ndata: kept\n\n', [
      { event: undefined, data: '' },
      { event: '', data: 'kept' },
    ]);
  });

  it('decodes a multi-byte UTF-8 character split across chunks', () => {
    const all = bytes('data: {"t":"é你😀"}\n\n');
    const expected = [{ event: undefined, data: '{"t":"é你😀"}' }];
    const emoji = bytes('😀');
    expect(emoji).toHaveLength(4);
    // cut inside the 2-, 3- and 4-byte sequences
    const start = bytes('data: {"t":"').length;
    for (const cut of [start + 1, start + 3, start + 4, start + 6, start + 7, start + 8]) {
      expect(parse([all.subarray(0, cut), all.subarray(cut)])).toEqual(expected);
    }
    expectSplitInvariant('data: {"t":"é你😀"}\n\n', expected);
  });

  it('throws SseEventTooLargeError when one unterminated line outgrows the cap', () => {
    const parser = new SseParser(64);
    expect(parser.push(bytes(`data: ${'x'.repeat(40)}`))).toEqual([]);
    let caught: unknown;
    try {
      parser.push(bytes('x'.repeat(40)));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SseEventTooLargeError);
    expect((caught as SseEventTooLargeError).limitBytes).toBe(64);
    expect((caught as Error).message).toBe('SSE event exceeds 64 bytes');
  });

  it('throws SseEventTooLargeError when the data lines of one event add up past the cap', () => {
    const parser = new SseParser(64);
    const line = `data: ${'y'.repeat(20)}\n`;
    expect(() => parser.push(bytes(line.repeat(5)))).toThrow(SseEventTooLargeError);
  });

  it('counts the cap per event, not per stream', () => {
    const parser = new SseParser(64);
    const event = `data: ${'z'.repeat(40)}\n\n`;
    const out: SseMessage[] = [];
    for (let i = 0; i < 10; i++) out.push(...parser.push(bytes(event)));
    expect(out).toHaveLength(10);
    // many small events in one chunk are fine too
    expect(new SseParser(64).push(bytes(event.repeat(10)))).toHaveLength(10);
  });

  it('finish() flushes a final event without its blank line', () => {
    const parser = new SseParser();
    expect(parser.push(bytes('data: a\n\ndata: [DONE]'))).toEqual([{ event: undefined, data: 'a' }]);
    expect(parser.finish()).toEqual([{ event: undefined, data: '[DONE]' }]);

    const lineEnded = new SseParser();
    expect(lineEnded.push(bytes('event: done\ndata: last\n'))).toEqual([]);
    expect(lineEnded.finish()).toEqual([{ event: 'done', data: 'last' }]);

    expect(new SseParser().finish()).toEqual([]);
  });
});

describe('encodeSseEvent', () => {
  it('writes the event line and one data line as a single string', () => {
    const payload = JSON.stringify({ type: 'response.output_text.delta', delta: 'hi\n"there"' });
    const encoded = encodeSseEvent('response.output_text.delta', payload);
    expect(encoded).toBe('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi\\n\\"there\\""}\n\n');
    expect(typeof encoded).toBe('string');
  });

  it('round-trips through SseParser', () => {
    const events = [
      encodeSseEvent('response.created', '{"a":1}'),
      encodeSseEvent('response.completed', '{"b":"😀"}'),
    ].join('');
    expectSplitInvariant(events, [
      { event: 'response.created', data: '{"a":1}' },
      { event: 'response.completed', data: '{"b":"😀"}' },
    ]);
  });

  it('encodeSseData writes a data-only event', () => {
    expect(encodeSseData('[DONE]')).toBe('data: [DONE]\n\n');
  });
});
