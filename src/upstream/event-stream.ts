import { errors as undiciErrors } from 'undici';
import { Errors, GatewayError } from '../errors.js';
import type { RawEvent } from '../protocol/model.js';
import { SseParser } from '../protocol/sse.js';
import type { Cancellation } from '../util/abort.js';
import type { RawEventStream, UpstreamTransport as TransportOptions } from './client.js';
import type { UpstreamExchange } from './exchange.js';

/** Turns one SSE `data` payload into raw events (pushed onto `out`); throws a GatewayError for a malformed one. */
export type DecodePayload = (data: string, out: RawEvent[]) => void;

/** A chunk that held no whole event yet: read on. */
const NOTHING_YET: RawEvent[] = [];

class FirstTokenTimeout extends Error {}

/**
 * The raw events of an accepted streaming exchange, a batch per network chunk. `read()` decodes
 * a chunk that has already arrived at once and returns its batch; only when the next chunk is
 * still on its way does it return a promise. So a turn reading a stream that is already there
 * takes no turn of the microtask queue per batch (an async generator takes three, and allocates a
 * promise for each). Timeouts: the first chunk within `firstTokenTimeoutMs` of the first read (a
 * timer while a read waits for it), then undici's body timeout between chunks. Every way out — the end, a
 * failure, `close()` — clears the timer, stops watching the caller's signal and, unless the
 * answer is complete, aborts the exchange, releasing its connection.
 */
export class UpstreamEventStream implements RawEventStream {
  private readonly parser = new SseParser();
  private firstTimer: NodeJS.Timeout | undefined;
  private firstChunkSeen = false;
  private reading = false;
  private closed = false;

  constructor(
    private readonly exchange: UpstreamExchange,
    private readonly decode: DecodePayload,
    private readonly signal: Cancellation,
    private readonly options: Pick<TransportOptions, 'firstTokenTimeoutMs' | 'idleTimeoutMs'>,
  ) {}

  read(): RawEvent[] | null | Promise<RawEvent[] | null> {
    // the first-token clock starts with the first read: what the turn does before it (starting
    // the response, approved tool calls) is not the upstream's time
    if (!this.reading) this.startReading();
    for (;;) {
      if (this.closed) return null;
      let chunk: ReturnType<UpstreamExchange['next']>;
      try {
        chunk = this.exchange.next();
      } catch (err) {
        throw this.failure(err);
      }
      if (chunk instanceof Promise) {
        // the clock runs only while a read waits for the first chunk: an answer already there
        // (it came with the headers) needs no timer
        if (!this.firstChunkSeen && this.firstTimer === undefined) {
          const exchange = this.exchange;
          this.firstTimer = setTimeout(() => exchange.abort(new FirstTokenTimeout()), this.options.firstTokenTimeoutMs);
        }
        return chunk.then(this.afterChunk, this.failed);
      }
      const batch = this.batchOf(chunk);
      if (batch !== NOTHING_YET) return batch;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.firstTimer);
    this.exchange.unwatch();
    // leaving early (error, client gone, consumer stopped): release the connection
    if (!this.exchange.finished) this.exchange.abort(new Error('stream closed'));
  }

  [Symbol.asyncIterator](): AsyncIterator<RawEvent[]> {
    return {
      next: async () => {
        const batch = await this.read();
        return batch === null ? { done: true, value: undefined } : { done: false, value: batch };
      },
      return: async () => {
        this.close();
        return { done: true, value: undefined };
      },
    };
  }

  private startReading(): void {
    this.reading = true;
    if (this.closed) return;
    const exchange = this.exchange;
    // the abort listener `post` added still guards the exchange (one per exchange: adding and
    // removing one on node's EventTarget costs ≈ 1.5 µs), and is removed when this reader is done
    if (this.signal.aborted) exchange.abort(new Error('client disconnected'));
  }

  /** A chunk that arrived after a wait: its batch, or (none yet) the next read's. */
  private readonly afterChunk = (chunk: Buffer | null): RawEvent[] | null | Promise<RawEvent[] | null> => {
    const batch = this.batchOf(chunk);
    return batch === NOTHING_YET ? this.read() : batch;
  };

  private readonly failed = (err: unknown): never => {
    throw this.failure(err);
  };

  /** The events of a chunk (NOTHING_YET when it completed none); at the end (null) the last ones, or null. */
  private batchOf(chunk: Buffer | null): RawEvent[] | null {
    try {
      return this.decodeChunk(chunk);
    } catch (err) {
      throw this.failure(err);
    }
  }

  private decodeChunk(chunk: Buffer | null): RawEvent[] | null {
    const out: RawEvent[] = [];
    if (chunk === null) {
      for (const message of this.parser.finish()) this.decode(message.data, out);
      this.close();
      return out.length > 0 ? out : null;
    }
    if (!this.firstChunkSeen) {
      this.firstChunkSeen = true;
      clearTimeout(this.firstTimer);
      this.firstTimer = undefined;
    }
    for (const message of this.parser.push(chunk)) this.decode(message.data, out);
    return out.length > 0 ? out : NOTHING_YET;
  }

  /** What the turn sees of a failure while reading (the stream is closed by then). */
  private failure(err: unknown): GatewayError {
    this.close();
    if (this.signal.aborted) return Errors.clientDisconnected();
    if (err instanceof GatewayError) return err;
    if (err instanceof FirstTokenTimeout || this.exchange.abortReason instanceof FirstTokenTimeout) return Errors.upstreamTimeout(`The upstream sent nothing within ${this.options.firstTokenTimeoutMs} ms.`);
    if (err instanceof undiciErrors.BodyTimeoutError) return Errors.upstreamTimeout(`The upstream stream was idle for more than ${this.options.idleTimeoutMs} ms.`);
    return Errors.upstreamDisconnected(`The upstream connection failed mid-stream: ${(err as Error).message}`);
  }
}

/** A stream over any async iterable of batches (a transformed stream): each read takes a turn of the microtask queue. */
export function streamOf(batches: AsyncIterable<RawEvent[]>): RawEventStream {
  const iterator = batches[Symbol.asyncIterator]();
  let done = false;
  return {
    read: () => (done ? null : iterator.next().then((result) => (result.done ? ((done = true), null) : result.value))),
    close: () => {
      if (done) return;
      done = true;
      void iterator.return?.()?.catch(() => undefined);
    },
    [Symbol.asyncIterator]: () => iterator,
  };
}
