import type { ServerResponse } from 'node:http';

export interface SimulatorRequestRecord {
  path: string;
  /**
   * The parsed JSON body (the raw text when it was not valid JSON); `null` once the log's recent
   * bodies exceed 64 MB and this one is among the oldest.
   */
  body: any;
  receivedAt: number;
  /** The client went away before the answer was completely written. */
  aborted: boolean;
  /** The answer was completely written. */
  finished: boolean;
}

/** Per-request state shared by the writers. */
export class Exchange {
  closed = false;
  /** We destroyed the socket on purpose (close_after_chunks, shutdown): not a client abort. */
  selfClosed = false;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;

  constructor(
    readonly res: ServerResponse,
    readonly record: SimulatorRequestRecord,
  ) {}

  /** Waits `ms`; returns false when the exchange closed meanwhile. */
  sleep(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.wake = () => resolve(false);
      this.timer = setTimeout(() => {
        this.timer = null;
        this.wake = null;
        resolve(!this.closed);
      }, ms);
    });
  }

  /** Waits for `drain`; returns false when the exchange closed first. */
  drain(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.wake = () => resolve(false);
      this.res.once('drain', () => {
        this.wake = null;
        resolve(!this.closed);
      });
    });
  }

  onClose(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
