import { randomBytes } from 'node:crypto';
import type { BlobStore } from '../files/blobs.js';
import type { ChunkInput, FileSearchStore, IngestionJob } from '../files/store.js';
import type { Logger } from '../util/logger.js';
import { EmbeddingsUnsupportedError, type Embedder } from './embedder.js';
import type { FileSearchSettings } from './settings.js';
import { WorkerTaskError, type ExtractionPool } from './worker-pool.js';

/** How often an idle ingestion loop looks for work it was not told about (other replicas, expired leases). */
const IDLE_POLL_MS = 1_000;

export interface IngestionDeps {
  store: FileSearchStore;
  blobs: BlobStore;
  pool: ExtractionPool;
  /** null: keyword-only (no embedding model configured). */
  embedder: Embedder | null;
  settings: FileSearchSettings;
  log: Logger;
  /** SQLite: one gateway owns the database, so claims left by a previous process are void at start. */
  singleProcess: boolean;
}

/**
 * Durable, asynchronous ingestion. The queue is the store itself: every attached file stays
 * `in_progress` until its chunks are published (one transaction) or its failure is recorded, so a
 * restart resumes where it stopped. Each file is claimed with a lease (renewed while it runs), so
 * replicas on one PostgreSQL share the work and a dead replica's files are taken over.
 * Extraction and chunking run in worker threads; embeddings are fetched here (I/O).
 */
export class IngestionService {
  readonly worker = `ingest-${randomBytes(6).toString('hex')}`;
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];
  private wakers: Array<() => void> = [];
  /** Set once the embedder said it cannot embed: every store is keyword-only from then on. */
  keywordOnlyReason: string | null;

  constructor(private readonly deps: IngestionDeps) {
    this.keywordOnlyReason = deps.embedder ? null : 'no embedding model is configured (fileSearch.embeddingModel)';
  }

  async start(): Promise<void> {
    if (this.deps.singleProcess) await this.deps.store.releaseClaims('*');
    for (let i = 0; i < Math.max(1, this.deps.settings.ingestionConcurrency); i++) this.loops.push(this.loop());
  }

  /** New work was queued: wake the idle loops. */
  notify(): void {
    for (const wake of this.wakers.splice(0)) wake();
  }

  async close(): Promise<void> {
    this.abort.abort();
    this.notify();
    await Promise.allSettled(this.loops);
    // unfinished files stay in_progress, unclaimed: the next start (or another replica) resumes them
    await this.deps.store.releaseClaims(this.worker).catch(() => undefined);
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let job: IngestionJob | undefined;
      try {
        job = await this.deps.store.claimJob(this.worker, Date.now(), this.deps.settings.claimLeaseMs);
      } catch (err) {
        this.deps.log.warn({ err: (err as Error).message }, 'file_search ingestion: cannot read the queue');
      }
      if (job) await this.process(job, signal);
      else await this.idle(signal);
    }
  }

  private idle(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        const at = this.wakers.indexOf(done);
        if (at !== -1) this.wakers.splice(at, 1);
        resolve();
      };
      const timer = setTimeout(done, IDLE_POLL_MS);
      timer.unref();
      this.wakers.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private async process(job: IngestionJob, signal: AbortSignal): Promise<void> {
    const { store, settings, log } = this.deps;
    const lease = settings.claimLeaseMs;
    const jobAbort = new AbortController();
    const jobSignal = AbortSignal.any([signal, jobAbort.signal]);
    // renew the lease while working; losing it (detached, cancelled) stops the work
    const renew = setInterval(() => {
      store.renewClaim(job, this.worker, Date.now(), lease).then(
        (held) => held || jobAbort.abort(),
        () => undefined,
      );
    }, Math.max(50, lease / 3));
    renew.unref();
    try {
      const chunks = await this.prepare(job, jobSignal);
      if (jobSignal.aborted) return;
      if (typeof chunks === 'string') {
        await store.failFile(job, this.worker, { code: 'invalid_file', message: chunks });
        return;
      }
      const usageBytes = chunks.reduce((sum, c) => sum + Buffer.byteLength(c.text) + (c.embedding ? c.embedding.byteLength : 0), 0);
      const published = await store.publishFile(job, this.worker, chunks, usageBytes);
      if (published) log.info({ vectorStore: job.storeId, file: job.fileId, chunks: chunks.length }, 'file_search: file indexed');
    } catch (err) {
      if (jobSignal.aborted) return; // shutting down or taken away: not a failure of the file
      const code = err instanceof WorkerTaskError && (err.code === 'unsupported_file' || err.code === 'invalid_file') ? err.code : 'server_error';
      log.warn({ vectorStore: job.storeId, file: job.fileId, err: (err as Error).message }, 'file_search: ingestion failed');
      await store.failFile(job, this.worker, { code, message: (err as Error).message }).catch(() => undefined);
    } finally {
      clearInterval(renew);
    }
  }

  /** The file's chunks with their embeddings, or why the file cannot be indexed. */
  private async prepare(job: IngestionJob, signal: AbortSignal): Promise<ChunkInput[] | string> {
    const { store, blobs, pool, embedder, settings, log } = this.deps;
    const file = await store.getFile(job.owner, job.fileId);
    if (!file) return `the file ${job.fileId} no longer exists`;
    const bytes = await blobs.readAll(file.id);
    const pieces = await pool.run(bytes, file.filename, job.chunking);
    if (pieces.length === 0) return `no text could be extracted from ${file.filename}`;
    if (!embedder || this.keywordOnlyReason !== null) {
      await this.noteKeywordOnly(job);
      return pieces.map((p) => ({ text: p.text }));
    }
    const tooLong = pieces.find((p) => p.tokens > settings.embeddingMaxTokens);
    if (tooLong) return `a chunk of ${tooLong.tokens} tokens exceeds the embedding model's limit of ${settings.embeddingMaxTokens}; use a smaller max_chunk_size_tokens`;
    try {
      const vectors = await embedder.embed(pieces.map((p) => p.text), signal);
      return pieces.map((p, i) => ({ text: p.text, embedding: vectors[i] }));
    } catch (err) {
      if (!(err instanceof EmbeddingsUnsupportedError)) throw err;
      // said once in the log, and in each store's metadata view: search goes keyword-only
      this.keywordOnlyReason = err.message;
      log.warn({ model: embedder.model, reason: err.message }, 'file_search: the upstream has no embeddings; vector stores are keyword-only');
      await this.noteKeywordOnly(job);
      return pieces.map((p) => ({ text: p.text }));
    }
  }

  private async noteKeywordOnly(job: IngestionJob): Promise<void> {
    const view = await this.deps.store.getStore(job.owner, job.storeId);
    if (view && view.keywordOnlyReason === null) await this.deps.store.updateStore(job.owner, job.storeId, { keywordOnlyReason: this.keywordOnlyReason });
  }
}
