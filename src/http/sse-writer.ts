import type { HttpResponse } from './exchange.js';
import { encodeSseEvent } from '../protocol/sse.js';
import { firstEvent } from '../util/events.js';
import { LinkedList } from '../util/linked-list.js';
import { wireText } from '../util/utf8.js';

const KEEPALIVE_MS = 15_000;

/**
 * The open writers, checked for silence by one timer that runs while there are any (unref'd,
 * three checks per period, so no silence lasts much longer than KEEPALIVE_MS): a timer of each
 * stream's own cost more to set and clear than a short stream's events.
 */
const open = new LinkedList<SseWriter>();
let ticker: NodeJS.Timeout | undefined;

function watch(writer: SseWriter): void {
  open.add(writer);
  if (ticker === undefined) {
    ticker = setInterval(checkSilence, KEEPALIVE_MS / 3);
    ticker.unref();
  }
}

function checkSilence(): void {
  const now = Date.now();
  open.forEach((writer) => writer.keepAlive(now));
  // stopped once a whole period passed with no stream open
  if (open.size === 0 && ticker !== undefined) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

/**
 * Writes public events to a client as SSE: headers on the first event (so failures before it
 * can still be plain HTTP errors), each event in one write, a comment keep-alive on an unref'd
 * timer while the stream is quiet, and `drained()` for backpressure.
 */
export class SseWriter {
  private opened = false;
  private lastWrite = 0;
  /** Neighbours among the open writers (`watch`). */
  newer: SseWriter | null = null;
  older: SseWriter | null = null;

  /** `keepaliveText`: what a quiet stream sends (an SSE comment; the Messages surface sends `ping` events). */
  constructor(
    private readonly res: HttpResponse,
    private readonly keepaliveText = ': keepalive\n\n',
  ) {}

  get headersSent(): boolean {
    return this.opened;
  }

  readonly write = (type: string, json: string): void => {
    if (!this.opened) this.open();
    if (this.res.destroyed) return;
    // events emitted in one tick (one upstream chunk's worth) are joined and leave as one
    // res.write: one HTTP chunk and one syscall, rather than three buffers per event
    if (this.pending === '') process.nextTick(this.flush);
    this.pending += encodeSseEvent(type, json);
  };

  /** Events of the current tick not yet handed to the socket. */
  private pending = '';

  private readonly flush = (): void => {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.lastWrite = Date.now();
    if (!this.res.destroyed && !this.res.writableEnded) this.res.write(wireText(text));
  };

  /** Resolves once the socket buffer has drained (immediately when it is not full). */
  drained(): Promise<void> | undefined {
    if (!this.res.writableNeedDrain || this.res.destroyed) return undefined;
    return firstEvent([this.res, 'drain'], [this.res, 'close']);
  }

  end(): void {
    open.remove(this);
    // the last events of this tick (the terminal one) go out with the end of the body
    const rest = this.pending;
    this.pending = '';
    if (!this.res.writableEnded) {
      if (rest !== '' && !this.res.destroyed) this.res.end(wireText(rest));
      else this.res.end();
    }
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
    this.lastWrite = Date.now();
    watch(this);
  }

  /** Sends the keep-alive text if the stream has been quiet for KEEPALIVE_MS (`now`); a stream that has ended is watched no more. */
  keepAlive(now: number): void {
    if (this.res.destroyed || this.res.writableEnded) open.remove(this);
    else if (this.pending === '' && now - this.lastWrite >= KEEPALIVE_MS) {
      this.lastWrite = now;
      this.res.write(this.keepaliveText);
    }
  }
}
