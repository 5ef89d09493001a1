import type { Dispatcher } from 'undici';

type DispatchController = Dispatcher.DispatchController;

/** What the upstream answered before its body: a 2xx opens the stream; anything else carries its body text. */
export type ExchangeStart = { ok: true; status: number } | { ok: false; status: number; body: string };

const MAX_QUEUED_CHUNKS = 64;
const noop = (): void => {};
/**
 * How much of a non-2xx body is kept: enough for any real error message. A larger body is cut
 * there and the exchange aborted, so a misbehaving upstream cannot make the gateway buffer it.
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * One upstream HTTP exchange on undici's dispatch API: response chunks are handed over as they
 * arrive with no stream objects in between (the gateway's hot path). The socket is paused while
 * the consumer is behind, so a slow client slows the upstream read rather than growing a queue.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler {
  readonly started: Promise<ExchangeStart>;
  private resolveStart!: (start: ExchangeStart) => void;
  private rejectStart!: (err: Error) => void;
  private controller: DispatchController | null = null;
  private status = 0;
  private errorBody: Buffer[] | null = null;
  private errorBodyBytes = 0;
  private readonly queue: Buffer[] = [];
  private ended = false;
  private failure: Error | null = null;
  /** The reader waiting for the next chunk: settled by the handler callback that brings it. */
  private waiter: { resolve: (next: ReturnType<UpstreamExchange['next']>) => void; reject: (err: Error) => void } | null = null;
  private pendingAbort: Error | null = null;

  constructor() {
    this.started = new Promise<ExchangeStart>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    // a rejection nobody awaited (the exchange was abandoned) must not crash the process
    this.started.catch(() => {});
  }

  /** Whether the response has fully arrived or failed. */
  get finished(): boolean {
    return this.ended || this.failure !== null;
  }

  /** Stops watching the caller's abort signal (set by the transport once the stream is accepted). */
  unwatch: () => void = noop;

  /** Why the exchange was aborted by us (undici reports its own error type). */
  abortReason: Error | null = null;

  /** Aborts the exchange (client gone, timeout); safe at any point. */
  abort(reason: Error): void {
    this.abortReason ??= reason;
    if (this.controller) {
      if (!this.controller.aborted) this.controller.abort(reason);
    } else {
      this.pendingAbort = reason;
    }
  }

  /** The next body chunk, or null at the end; throws the failure that ended the stream. */
  next(): Promise<Buffer | null> | Buffer | null {
    const chunk = this.queue.shift();
    if (chunk !== undefined) {
      if (this.queue.length < MAX_QUEUED_CHUNKS / 2 && this.controller?.paused) this.controller.resume();
      return chunk;
    }
    if (this.failure) throw this.failure;
    if (this.ended) return null;
    return new Promise<Buffer | null>((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  onRequestStart(controller: DispatchController): void {
    this.controller = controller;
    if (this.pendingAbort) controller.abort(this.pendingAbort);
  }

  onResponseStart(_controller: DispatchController, statusCode: number): void {
    this.status = statusCode;
    if (statusCode >= 200 && statusCode < 300) this.resolveStart({ ok: true, status: statusCode });
    else this.errorBody = [];
  }

  onResponseData(controller: DispatchController, chunk: Buffer): void {
    if (this.errorBody) {
      const room = MAX_ERROR_BODY_BYTES - this.errorBodyBytes;
      this.errorBody.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      this.errorBodyBytes += Math.min(chunk.length, room);
      if (chunk.length >= room) {
        // the cap is reached: answer with what was kept, and stop reading the rest
        this.resolveErrorStart();
        controller.abort(new Error('upstream error body too large'));
      }
      return;
    }
    this.queue.push(chunk);
    if (this.queue.length >= MAX_QUEUED_CHUNKS) controller.pause();
    this.wake();
  }

  onResponseEnd(): void {
    if (this.errorBody) this.resolveErrorStart();
    this.ended = true;
    this.wake();
  }

  onResponseError(_controller: DispatchController, error: Error): void {
    if (this.status === 0 || this.errorBody) this.rejectStart(error);
    this.failure = error;
    this.wake();
  }

  private resolveErrorStart(): void {
    // a promise settles once: a later end or abort after the cap changes nothing
    this.resolveStart({ ok: false, status: this.status, body: Buffer.concat(this.errorBody ?? []).toString('utf8') });
  }

  /** Hands what just arrived (a chunk, the end, the failure) to a waiting reader, without a second promise. */
  private wake(): void {
    const waiter = this.waiter;
    if (!waiter) return;
    this.waiter = null;
    try {
      waiter.resolve(this.next());
    } catch (err) {
      waiter.reject(err as Error);
    }
  }
}
