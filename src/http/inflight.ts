import type { Stoppable } from '../util/abort.js';

/**
 * The foreground turns running in HTTP requests, so a shutdown can wait for them (up to its
 * grace period) and then stop the rest with one abort reason (their streams end with
 * `response.failed`, stored like any other terminal state).
 */
export class InflightTurns {
  private readonly controllers = new Set<Stoppable>();
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.controllers.size;
  }

  add(controller: Stoppable): void {
    this.controllers.add(controller);
  }

  delete(controller: Stoppable): void {
    if (!this.controllers.delete(controller) || this.controllers.size > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves true once no turn runs, false if `timeoutMs` passes first. */
  drained(timeoutMs: number): Promise<boolean> {
    if (this.controllers.size === 0) return Promise.resolve(true);
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
    const count = this.controllers.size;
    for (const controller of this.controllers) controller.abort(reason);
    return count;
  }
}
