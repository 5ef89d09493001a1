import type Database from 'better-sqlite3';

interface Job {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit for the embedded store (issue 16: `store: true` at concurrency). Every stored turn
 * writes its run and response when it starts and settles when it ends; each as its own
 * transaction costs a WAL commit (page writes) per turn. Writes that arrive in one event-loop turn
 * run together in one IMMEDIATE transaction, each in its own savepoint — one write's failure rolls
 * back only that write — and every caller hears of its write only once the transaction has
 * committed, so what a client is told is stored is stored. A lone write waits only for the end of
 * the current loop turn.
 */
export class SqliteWriteBatches {
  private pending: Job[] = [];
  /**
   * One job's work in a transaction of its own, or in a savepoint inside a batch's. Made once:
   * better-sqlite3's `transaction()` builds four wrapper functions with their properties on every
   * call, which costs more than the writes of a short turn.
   */
  private readonly inTransaction: Database.Transaction<(work: () => unknown) => unknown>;
  /** Several jobs in one transaction, each in its own savepoint: one job's failure rolls back only that job. */
  private readonly inBatch: Database.Transaction<(jobs: readonly Job[], outcomes: Outcome[]) => void>;

  constructor(database: Database.Database) {
    this.inTransaction = database.transaction((work: () => unknown) => work());
    this.inBatch = database.transaction((jobs: readonly Job[], outcomes: Outcome[]) => {
      for (const job of jobs) {
        try {
          // nested: a savepoint, rolled back alone when its work throws
          outcomes.push({ ok: true, value: this.inTransaction(job.work) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
  }

  /** Runs `work` (synchronous statements) in the next batch; resolves with its result after the commit. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Commits what is pending now (before the connection closes). */
  flush(): void {
    if (this.pending.length === 0) return;
    const jobs = this.pending;
    this.pending = [];
    const outcomes: Outcome[] = [];
    try {
      if (jobs.length === 1) outcomes.push({ ok: true, value: this.inTransaction.immediate(jobs[0].work) });
      else this.inBatch.immediate(jobs, outcomes);
    } catch (error) {
      // the commit itself failed (or the lone job threw): nothing of this batch is stored
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.error);
    });
  }
}
