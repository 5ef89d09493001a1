// A quiet stream gets a keep-alive (src/http/sse-writer.ts): an SSE comment (or the writer's own
// text, the Messages surface's `ping`) once the stream has been silent for 15 s, checked by one
// timer shared by every open stream, which stops when none is open.
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HttpResponse } from '../../src/http/exchange.js';
import { SseWriter } from '../../src/http/sse-writer.js';

/** A response that keeps what is written to it, as text. */
function collectingResponse(): { res: HttpResponse; text: () => string } {
  const chunks: string[] = [];
  const res = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  Object.assign(res, { headersSent: false, writeHead: () => res, setHeader: () => res, getHeader: () => undefined, hasHeader: () => false });
  return { res: res as unknown as HttpResponse, text: () => chunks.join('') };
}

const count = (text: string, part: string) => text.split(part).length - 1;
const tick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('SSE keep-alive', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  });
  afterEach(async () => {
    // every stream of the test has ended: the shared timer stops within a check period
    await vi.advanceTimersByTimeAsync(10_000);
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });

  it('a quiet stream gets one keep-alive per 15 s of silence, a busy one none', async () => {
    const quiet = collectingResponse();
    const busy = collectingResponse();
    const quietWriter = new SseWriter(quiet.res);
    const busyWriter = new SseWriter(busy.res);
    quietWriter.open();
    busyWriter.open();
    for (let second = 0; second < 40; second += 4) {
      busyWriter.write('response.output_text.delta', '{"delta":"x"}');
      await tick();
      await vi.advanceTimersByTimeAsync(4_000);
    }
    // 40 s of silence: a keep-alive after 15–20 s, another 15–20 s later, none every check
    expect(count(quiet.text(), ': keepalive\n\n')).toBe(2);
    expect(count(busy.text(), ': keepalive')).toBe(0);
    expect(count(busy.text(), 'event: response.output_text.delta')).toBe(10);
    quietWriter.end();
    busyWriter.end();
  });

  it("uses the writer's own keep-alive text, and an ended stream gets none", async () => {
    const ping = collectingResponse();
    const writer = new SseWriter(ping.res, 'event: ping\ndata: {"type": "ping"}\n\n');
    writer.open();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(count(ping.text(), 'event: ping')).toBe(1);
    writer.end();
    const ended = ping.text();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ping.text()).toBe(ended);
  });

  it('the shared timer stops once no stream is open, and starts again with the next', async () => {
    const first = collectingResponse();
    const writer = new SseWriter(first.res);
    writer.open();
    expect(vi.getTimerCount()).toBe(1);
    // a second stream shares the timer
    const second = new SseWriter(collectingResponse().res);
    second.open();
    expect(vi.getTimerCount()).toBe(1);
    writer.end();
    second.end();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(vi.getTimerCount()).toBe(0);
    const third = collectingResponse();
    const again = new SseWriter(third.res);
    again.open();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(count(third.text(), ': keepalive')).toBe(1);
    again.end();
  });

  it('a stream whose client is gone is watched no more', async () => {
    const gone = collectingResponse();
    const writer = new SseWriter(gone.res);
    writer.open();
    gone.res.destroy();
    await vi.advanceTimersByTimeAsync(5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(gone.text()).toBe('');
  });
});
