import type { Logger } from '../util/logger.js';
import type { ConversationStore } from './conversations.js';
import type { ResponseStore } from './store.js';

export interface RetentionOptions {
  /** How old (ms) a response or conversation item may get before it is pruned. */
  maxAgeMs: number;
  /** How often the sweeper runs. */
  intervalMs: number;
  /** Rows deleted per transaction: a large backlog never holds the database for long. */
  batchSize: number;
}

/**
 * Prunes what is older than the retention (config `store.retention`): settled responses with
 * their event logs, call records and approvals, and conversation items. Runs in the background,
 * in bounded batches (one short transaction each, yielding between them), so serving never waits
 * on a long delete. Replicas may all sweep: each batch takes rows no other batch holds.
 */
export class RetentionSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly responses: ResponseStore,
    private readonly conversations: ConversationStore,
    private readonly options: RetentionOptions,
    private readonly log: Logger,
  ) {}

  start(): void {
    const tick = () => {
      this.running ??= this.sweep()
        .then(() => undefined, (err: unknown) => this.log.warn({ err }, 'retention sweep failed; retrying on the next one'))
        .finally(() => {
          this.running = undefined;
        });
    };
    tick();
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops sweeping; waits for a batch in progress. */
  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** One full pass: batches until nothing older than the retention is left (or the sweeper stops). */
  async sweep(now = Date.now()): Promise<{ responses: number; items: number }> {
    const before = Math.floor((now - this.options.maxAgeMs) / 1000);
    const responses = await this.drain((limit) => this.responses.pruneResponses(before, limit));
    const items = await this.drain((limit) => this.conversations.pruneItems(before, limit));
    if (responses + items > 0) this.log.info({ responses, conversationItems: items, olderThan: new Date(before * 1000).toISOString() }, 'retention: pruned');
    return { responses, items };
  }

  private async drain(batch: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const deleted = await batch(this.options.batchSize);
      total += deleted;
      if (deleted < this.options.batchSize) break;
      // let requests in between batches
      await new Promise((resolve) => setImmediate(resolve));
    }
    return total;
  }
}
