import type { ServerResponse } from 'node:http';
import { encodeSseEvent } from '../protocol/sse.js';

const KEEPALIVE_MS = 15_000;

/**
 * Writes public events to a client as SSE: headers on the first event (so failures before it
 * can still be plain HTTP errors), each event in one write, a comment keep-alive on an unref'd
 * timer while the stream is quiet, and `drained()` for backpressure.
 */
export class SseWriter {
  private opened = false;
  private lastWrite = 0;
  private keepalive: NodeJS.Timeout | undefined;

  /** `keepaliveText`: what a quiet stream sends (an SSE comment; the Messages surface sends `ping` events). */
  constructor(
    private readonly res: ServerResponse,
    private readonly keepaliveText = ': keepalive\n\n',
  ) {}

  get headersSent(): boolean {
    return this.opened;
  }

  readonly write = (type: string, json: string): void => {
    if (!this.opened) this.open();
    if (this.res.destroyed) return;
    // events emitted in one tick (one upstream chunk's worth) leave in one syscall
    if (!this.corked) {
      this.corked = true;
      this.res.cork();
      process.nextTick(this.uncork);
    }
    this.res.write(encodeSseEvent(type, json));
    this.lastWrite = Date.now();
  };

  private corked = false;

  private readonly uncork = (): void => {
    this.corked = false;
    this.res.uncork();
  };

  /** Resolves once the socket buffer has drained (immediately when it is not full). */
  drained(): Promise<void> | undefined {
    if (!this.res.writableNeedDrain || this.res.destroyed) return undefined;
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  end(): void {
    clearInterval(this.keepalive);
    if (!this.res.writableEnded) this.res.end();
  }

  /** Sends the headers now (a resumed stream may wait long for its next event). */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    // checked three times per period, so no silence lasts much longer than KEEPALIVE_MS
    this.keepalive = setInterval(() => {
      if (Date.now() - this.lastWrite >= KEEPALIVE_MS && !this.res.destroyed) this.res.write(this.keepaliveText);
    }, KEEPALIVE_MS / 3);
    this.keepalive.unref();
  }
}
