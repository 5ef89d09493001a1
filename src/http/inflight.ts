import type { Stoppable } from '../util/abort.js';

/** A running turn's place among them: `add` gives it, `delete` takes it back. */
export interface InflightTurn {
  readonly controller: Stoppable;
  /** Neighbours in the list (null at its ends); `listed` false once deleted. */
  newer: InflightTurn | null;
  older: InflightTurn | null;
  listed: boolean;
}

/**
 * The foreground turns running in HTTP requests, so a shutdown can wait for them (up to its
 * grace period) and then stop the rest with one abort reason (their streams end with
 * `response.failed`, stored like any other terminal state).
 */
export class InflightTurns {
  /** A list through the turns themselves: joining and leaving it hash nothing (a Set did, a few µs a request). */
  private newest: InflightTurn | null = null;
  private count = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.count;
  }

  add(controller: Stoppable): InflightTurn {
    const turn: InflightTurn = { controller, newer: null, older: this.newest, listed: true };
    if (this.newest !== null) this.newest.newer = turn;
    this.newest = turn;
    this.count++;
    return turn;
  }

  delete(turn: InflightTurn): void {
    if (!turn.listed) return;
    turn.listed = false;
    if (turn.newer !== null) turn.newer.older = turn.older;
    else this.newest = turn.older;
    if (turn.older !== null) turn.older.newer = turn.newer;
    turn.newer = turn.older = null;
    if (--this.count > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves true once no turn runs, false if `timeoutMs` passes first. */
  drained(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Aborts every running turn; returns how many. */
  abortAll(reason: Error): number {
    const count = this.count;
    for (let turn = this.newest; turn !== null; ) {
      const older: InflightTurn | null = turn.older;
      turn.controller.abort(reason);
      turn = older;
    }
    return count;
  }
}
