import type { Stoppable } from '../util/abort.js';
import { LinkedList } from '../util/linked-list.js';

/** A running turn's place among them: `add` gives it, `delete` takes it back. */
export interface InflightTurn {
  readonly controller: Stoppable;
  newer: InflightTurn | null;
  older: InflightTurn | null;
}

/**
 * The foreground turns running in HTTP requests, so a shutdown can wait for them (up to its
 * grace period) and then stop the rest with one abort reason (their streams end with
 * `response.failed`, stored like any other terminal state).
 */
export class InflightTurns {
  private readonly turns = new LinkedList<InflightTurn>();
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.turns.size;
  }

  add(controller: Stoppable): InflightTurn {
    const turn: InflightTurn = { controller, newer: null, older: null };
    this.turns.add(turn);
    return turn;
  }

  delete(turn: InflightTurn): void {
    if (!this.turns.remove(turn) || this.turns.size > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves true once no turn runs, false if `timeoutMs` passes first. */
  drained(timeoutMs: number): Promise<boolean> {
    if (this.turns.size === 0) return Promise.resolve(true);
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
    const count = this.turns.size;
    this.turns.forEach((turn) => turn.controller.abort(reason));
    return count;
  }
}
