import type { BlobStore } from '../files/blobs.js';
import type { FileSearchStore } from '../files/store.js';
import type { Logger } from '../util/logger.js';

export interface ExpirySweeperDeps {
  store: FileSearchStore;
  blobs: BlobStore;
  log: Logger;
  /** Time between sweeps. */
  intervalMs: number;
  /** Objects deleted per batch; a sweep runs at most `maxBatches` batches, then waits for the next tick. */
  batchSize: number;
  maxBatches?: number;
  /** Seconds since the epoch (tests move it forward). */
  now?: () => number;
}

export interface SweepResult {
  files: number;
  stores: number;
}

const DEFAULT_MAX_BATCHES = 10;

/**
 * Deletes what has expired: files past their `expires_at` (bytes and metadata, detached from every
 * store) and vector stores idle past `expires_after` (their files stay; only the store, its
 * attachments and its index go — as OpenAI's).
 *
 * Bounded: a sweep deletes at most `batchSize × maxBatches` objects of each kind and yields to
 * the event loop between batches, so a backlog (a restart after a long pause) never stalls
 * requests; what is left is taken at the next tick. Several replicas on one PostgreSQL may sweep
 * at once: deletes are idempotent, so the worst case is a wasted query.
 *
 * The metadata row goes first, then the blob: a crash between the two leaves an unreferenced blob
 * (harmless), never a file whose bytes are missing.
 */
export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;
  private closed = false;

  constructor(private readonly deps: ExpirySweeperDeps) {}

  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), this.deps.intervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One sweep (a sweep already running is joined, never doubled). */
  sweep(): Promise<SweepResult> {
    this.running ??= this.sweepOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepOnce(): Promise<SweepResult> {
    const { store, blobs, log, batchSize } = this.deps;
    const maxBatches = this.deps.maxBatches ?? DEFAULT_MAX_BATCHES;
    const now = (this.deps.now ?? (() => Math.floor(Date.now() / 1000)))();
    const result: SweepResult = { files: 0, stores: 0 };
    try {
      for (let batch = 0; batch < maxBatches && !this.closed; batch++) {
        const stores = await store.expiredStores(now, batchSize);
        for (const s of stores) if (await store.deleteStore(s.owner, s.id)) result.stores++;
        if (stores.length < batchSize) break;
        await yieldToEventLoop();
      }
      for (let batch = 0; batch < maxBatches && !this.closed; batch++) {
        const files = await store.expiredFiles(now, batchSize);
        for (const f of files) {
          if (await store.deleteFile(f.owner, f.id)) result.files++;
          await blobs.delete(f.id);
        }
        if (files.length < batchSize) break;
        await yieldToEventLoop();
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'file_search: the expiry sweep failed (retried at the next tick)');
      throw err;
    }
    if (result.files + result.stores > 0) log.info(result, 'file_search: expired files and vector stores deleted');
    return result;
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
