import { writeSync } from 'node:fs';

/** What pino writes to: one serialised line per call. */
export interface LogDestination {
  write(line: string): void;
}

/** A batch is written once it holds this many characters (≈ 35 access-log lines)… */
const BATCH_CHARS = 8 * 1024;
/** …and at the latest this long after its first line, so a quiet gateway's lines are not held back. */
const FLUSH_AFTER_MS = 25;
/** While stdout takes nothing (a full pipe), lines beyond this are dropped rather than held. */
const MAX_HELD_CHARS = 4 * 1024 * 1024;

let shared: LogDestination | undefined;

/**
 * The gateway's stdout log, written in batches (as nginx's `access_log … buffer= flush=`). Pino's
 * default destination hands each line to a thread-pool write of its own: a thread wake-up, the
 * write and an event-loop wake-up per request for the access log alone, ≈ 35 µs of the gateway's
 * CPU per request under load (`bench/access-log.mjs`), and at exit a write still on the pool can
 * be cut or overtaken. Here a busy gateway makes one plain `write` per ≈ 35 lines, on the event
 * loop, in order; what is held is written at exit; a `kill -9` loses at most the last 25 ms of
 * lines. One per process (stdout is), shared by every gateway in it.
 */
export function batchedStdout(): LogDestination {
  shared ??= new BatchedWriter(1);
  return shared;
}

class BatchedWriter implements LogDestination {
  private batch = '';
  /** The part of a write the descriptor did not take (a full pipe), written before the batch. */
  private unwritten: Buffer | null = null;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly fd: number) {
    process.once('exit', () => this.flushAtExit());
  }

  write(line: string): void {
    if (this.batch.length > MAX_HELD_CHARS) return;
    this.batch += line;
    if (this.batch.length >= BATCH_CHARS && this.unwritten === null) this.flush();
    else this.flushLater();
  }

  private flushLater(): void {
    if (this.flushTimer !== undefined) return;
    this.flushTimer = setTimeout(() => this.flush(), FLUSH_AFTER_MS);
    // a pending batch does not keep the process alive: exit writes it
    this.flushTimer.unref();
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // stdout took only part (a non-blocking pipe that is full): the rest goes first, a little later
    if (this.writeHeld()) this.flushLater();
  }

  /** Writes the unwritten rest, else the batch; returns whether something is still held. */
  private writeHeld(): boolean {
    if (this.unwritten === null && this.batch.length === 0) return false;
    const bytes = this.unwritten ?? Buffer.from(this.batch);
    if (this.unwritten === null) this.batch = '';
    this.unwritten = this.writeSome(bytes);
    return this.unwritten !== null || this.batch.length > 0;
  }

  /** Writes what the descriptor takes now; returns the rest, or null when all was written (or cannot ever be: a closed pipe). */
  private writeSome(bytes: Buffer): Buffer | null {
    let offset = 0;
    try {
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset);
      return null;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EAGAIN' ? bytes.subarray(offset) : null;
    }
  }

  /** At exit, with no event loop left: a full pipe is retried a bounded number of times. */
  private flushAtExit(): void {
    clearTimeout(this.flushTimer);
    for (let attempt = 0; attempt < 10_000 && this.writeHeld(); attempt++);
  }
}
