// UpstreamExchange (src/upstream/exchange.ts) hands undici's callbacks to one reader: a chunk
// already queued at once, else the promise the next callback settles — with the chunk, the end
// (null) or the failure — and it pauses the socket while the reader is behind.
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { UpstreamExchange } from '../../src/upstream/exchange.js';

/** The part of undici's controller the exchange uses. */
function controller() {
  return { paused: false, aborted: false, reason: null as Error | null, pause() { this.paused = true; }, resume() { this.paused = false; }, abort(reason: Error) { this.aborted = true; this.reason = reason; } };
}

function started() {
  const exchange = new UpstreamExchange();
  const c = controller();
  const dc = c as unknown as Dispatcher.DispatchController;
  exchange.onRequestStart(dc);
  exchange.onResponseStart(dc, 200);
  return { exchange, c, dc };
}

describe('UpstreamExchange', () => {
  it('a queued chunk comes back at once; a reader that waits gets the next chunk, then the end', async () => {
    const { exchange, dc } = started();
    expect(await exchange.started).toEqual({ ok: true, status: 200 });
    exchange.onResponseData(dc, Buffer.from('a'));
    expect(exchange.next()).toEqual(Buffer.from('a'));
    const waiting = exchange.next();
    expect(waiting).toBeInstanceOf(Promise);
    exchange.onResponseData(dc, Buffer.from('b'));
    expect(await waiting).toEqual(Buffer.from('b'));
    const last = exchange.next();
    exchange.onResponseEnd();
    expect(await last).toBeNull();
    expect(exchange.finished).toBe(true);
    expect(exchange.next()).toBeNull();
  });

  it('a failure while the reader waits rejects its read, and every later read throws it', async () => {
    const { exchange, dc } = started();
    const waiting = exchange.next();
    exchange.onResponseError(dc, new Error('socket hang up'));
    await expect(waiting).rejects.toThrow('socket hang up');
    expect(() => exchange.next()).toThrow('socket hang up');
  });

  it('chunks queued before a failure are still read first', () => {
    const { exchange, dc } = started();
    exchange.onResponseData(dc, Buffer.from('a'));
    exchange.onResponseError(dc, new Error('reset'));
    expect(exchange.next()).toEqual(Buffer.from('a'));
    expect(() => exchange.next()).toThrow('reset');
  });

  it('pauses the socket while 64 chunks wait, and resumes it once the reader has taken half', () => {
    const { exchange, c, dc } = started();
    for (let i = 0; i < 64; i++) exchange.onResponseData(dc, Buffer.from(String(i)));
    expect(c.paused).toBe(true);
    for (let i = 0; i < 32; i++) exchange.next();
    expect(c.paused).toBe(true);
    exchange.next();
    expect(c.paused).toBe(false);
  });
});
