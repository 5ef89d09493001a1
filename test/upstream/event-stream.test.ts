// The reader of an upstream stream (src/upstream/event-stream.ts): a chunk already there is decoded
// and handed over at once (no promise), every way out releases the exchange, and the first-token
// clock starts with the first read.
import { describe, expect, it, vi } from 'vitest';
import { Errors } from '../../src/errors.js';
import type { RawEvent } from '../../src/protocol/model.js';
import { UpstreamEventStream, streamOf } from '../../src/upstream/event-stream.js';
import type { UpstreamExchange } from '../../src/upstream/exchange.js';

/** An exchange whose chunks are pushed by the test: `next()` answers at once when one is queued, as UpstreamExchange does. */
class ScriptedExchange {
  readonly queue: (Buffer | null)[] = [];
  private waiter: (() => void) | null = null;
  abortReason: Error | null = null;
  ended = false;
  unwatched = 0;

  get finished(): boolean {
    return this.ended || this.abortReason !== null;
  }
  push(text: string | null): void {
    this.queue.push(text === null ? null : Buffer.from(text));
    this.waiter?.();
  }
  next(): Buffer | null | Promise<Buffer | null> {
    if (this.abortReason) throw this.abortReason;
    if (this.queue.length > 0) {
      const chunk = this.queue.shift()!;
      if (chunk === null) this.ended = true;
      return chunk;
    }
    return new Promise<void>((resolve) => (this.waiter = resolve)).then(() => ((this.waiter = null), this.next()));
  }
  abort(reason: Error): void {
    this.abortReason ??= reason;
    this.waiter?.();
  }
  unwatch(): void {
    this.unwatched++;
  }
}

const text = (delta: string) => `data: ${JSON.stringify({ delta })}\n\n`;
const decode = (data: string, out: RawEvent[]) => {
  const { delta } = JSON.parse(data) as { delta: string };
  if (delta === 'bad') throw Errors.upstreamInvalidResponse('bad chunk');
  out.push({ kind: 'text', delta });
};

function open(exchange: ScriptedExchange, options = { firstTokenTimeoutMs: 5_000, idleTimeoutMs: 5_000 }, signal = new AbortController().signal) {
  return new UpstreamEventStream(exchange as unknown as UpstreamExchange, decode, signal, options);
}

describe('UpstreamEventStream', () => {
  it('hands over a chunk that is already there at once, not as a promise; waits only for one still on its way', async () => {
    const exchange = new ScriptedExchange();
    exchange.push(text('a') + text('b'));
    const stream = open(exchange);
    expect(stream.read()).toEqual([{ kind: 'text', delta: 'a' }, { kind: 'text', delta: 'b' }]);
    const pending = stream.read();
    expect(pending).toBeInstanceOf(Promise);
    exchange.push(text('c'));
    expect(await pending).toEqual([{ kind: 'text', delta: 'c' }]);
    exchange.push(null);
    expect(stream.read()).toBeNull();
    expect(stream.read()).toBeNull();
    // ended on its own: released, not aborted
    expect(exchange.abortReason).toBeNull();
    expect(exchange.unwatched).toBe(1);
  });

  it('reads on past chunks that complete no event, and decodes an event split across chunks', async () => {
    const exchange = new ScriptedExchange();
    const whole = text('split');
    exchange.push(whole.slice(0, 5));
    exchange.push(whole.slice(5, 12));
    const stream = open(exchange);
    const pending = stream.read();
    expect(pending).toBeInstanceOf(Promise);
    exchange.push(whole.slice(12));
    expect(await pending).toEqual([{ kind: 'text', delta: 'split' }]);
    // the last event without its blank line still counts at the end
    exchange.push('data: {"delta":"tail"}');
    exchange.push(null);
    expect(await stream.read()).toEqual([{ kind: 'text', delta: 'tail' }]);
    expect(stream.read()).toBeNull();
  });

  it('close() before the end aborts the exchange (its connection is released) and ends the stream; a second close does nothing', () => {
    const exchange = new ScriptedExchange();
    exchange.push(text('a'));
    const stream = open(exchange);
    stream.read();
    stream.close();
    stream.close();
    expect(exchange.abortReason?.message).toBe('stream closed');
    expect(exchange.unwatched).toBe(1);
    expect(stream.read()).toBeNull();
  });

  it('a malformed payload throws its GatewayError and aborts the exchange', () => {
    const exchange = new ScriptedExchange();
    exchange.push(text('ok') + text('bad'));
    const stream = open(exchange);
    expect(() => stream.read()).toThrow(/bad chunk/);
    expect(exchange.abortReason).not.toBeNull();
    expect(stream.read()).toBeNull();
  });

  it('a failure after a wait rejects as the client sees it: a connection lost mid-stream is upstream_disconnected', async () => {
    const exchange = new ScriptedExchange();
    const stream = open(exchange);
    const pending = stream.read();
    exchange.abort(new Error('socket hang up'));
    await expect(pending).rejects.toMatchObject({ code: 'upstream_disconnected' });
  });

  it('the first-token clock starts with the first read, not when the stream is made', async () => {
    const exchange = new ScriptedExchange();
    const stream = open(exchange, { firstTokenTimeoutMs: 30, idleTimeoutMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(exchange.abortReason).toBeNull();
    const pending = stream.read();
    await expect(pending).rejects.toMatchObject({ code: 'upstream_timeout', message: expect.stringContaining('sent nothing within 30 ms') });
  });

  it('the clock runs only while a read waits for the first chunk: no timer for one already there, none after it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // the answer came with the headers: read at once, no timer at all
      const ready = new ScriptedExchange();
      ready.push(text('a'));
      const readyStream = open(ready, { firstTokenTimeoutMs: 30, idleTimeoutMs: 5_000 });
      expect(readyStream.read()).toEqual([{ kind: 'text', delta: 'a' }]);
      expect(vi.getTimerCount()).toBe(0);
      readyStream.close();

      // nothing yet: the read waits under the clock, which the first chunk stops
      const later = new ScriptedExchange();
      const laterStream = open(later, { firstTokenTimeoutMs: 30, idleTimeoutMs: 5_000 });
      const pending = laterStream.read();
      expect(vi.getTimerCount()).toBe(1);
      later.push(text('b'));
      await expect(pending).resolves.toEqual([{ kind: 'text', delta: 'b' }]);
      expect(vi.getTimerCount()).toBe(0);
      laterStream.close();

      // half an event first: the rest may take longer than the first-token timeout (undici's idle timeout applies)
      const split = new ScriptedExchange();
      const whole = text('c');
      split.push(whole.slice(0, 5));
      const splitStream = open(split, { firstTokenTimeoutMs: 30, idleTimeoutMs: 5_000 });
      const rest = splitStream.read();
      expect(vi.getTimerCount()).toBe(0);
      await vi.advanceTimersByTimeAsync(100);
      expect(split.abortReason).toBeNull();
      split.push(whole.slice(5));
      await expect(rest).resolves.toEqual([{ kind: 'text', delta: 'c' }]);
      splitStream.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a client already gone when reading starts is a client disconnect', async () => {
    const exchange = new ScriptedExchange();
    const controller = new AbortController();
    controller.abort();
    const stream = open(exchange, undefined, controller.signal);
    // thrown at once or rejected: the turn loop reads inside its try either way
    await expect(Promise.resolve().then(() => stream.read())).rejects.toMatchObject({ code: 'client_disconnected' });
  });

  it('for await reads it too, and leaving the loop early releases the exchange', async () => {
    const exchange = new ScriptedExchange();
    exchange.push(text('a'));
    exchange.push(text('b'));
    const seen: string[] = [];
    for await (const batch of open(exchange)) {
      seen.push(...batch.map((event) => (event as { delta: string }).delta));
      break;
    }
    expect(seen).toEqual(['a']);
    expect(exchange.abortReason?.message).toBe('stream closed');
  });
});

describe('streamOf', () => {
  it('reads any async iterable of batches, and close() ends it early', async () => {
    let finished = false;
    async function* batches() {
      try {
        yield [{ kind: 'text', delta: 'x' }] as RawEvent[];
        yield [{ kind: 'text', delta: 'y' }] as RawEvent[];
      } finally {
        finished = true;
      }
    }
    const stream = streamOf(batches());
    expect(await stream.read()).toEqual([{ kind: 'text', delta: 'x' }]);
    stream.close();
    expect(await stream.read()).toBeNull();
    await new Promise((resolve) => setImmediate(resolve));
    expect(finished).toBe(true);
  });
});
