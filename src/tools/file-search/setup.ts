import { join } from 'node:path';
import type { ExecutionFactory } from '../handler.js';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../util/logger.js';
import { BlobStore } from '../../files/blobs.js';
import { PostgresFileSearchStore } from '../../files/postgres-store.js';
import { SqliteFileSearchStore } from '../../files/sqlite-store.js';
import type { FileSearchStore } from '../../files/store.js';
import { directEmbeddingsPost, HttpEmbedder, routedEmbeddingsPost, type EmbeddingsRouter } from '../../retrieval/embedder.js';
import { fileSearchExecutionFactory } from './execution.js';
import { ExpirySweeper } from '../../retrieval/expiry-sweeper.js';
import { keywordRewriter, modelRewriter, type ChatRouter, type QueryRewriter } from '../../retrieval/query-rewrite.js';
import { IngestionService } from '../../retrieval/ingestion.js';
import { Retriever } from '../../retrieval/search.js';
import { ExtractionPool } from '../../retrieval/worker-pool.js';

/** Default per-call timeout of the file_search tool (the operator's `tools.timeoutsMs.file_search` wins). */
const FILE_SEARCH_TIMEOUT_MS = 30_000;

export interface FileSearchService {
  store: FileSearchStore;
  blobs: BlobStore;
  ingestion: IngestionService;
  retriever: Retriever;
  expiry: ExpirySweeper;
  /** `rewrite_query` on direct searches: the configured model, else the keyword rewrite. */
  rewriter: QueryRewriter;
  /** The execution side of the `file_search` tool type. */
  execution: ExecutionFactory;
  close(): Promise<void>;
}

/**
 * Files, vector stores and file_search, composed: the metadata/retrieval store beside the
 * responses (same SQLite file or PostgreSQL schema), blobs on disk, the embedder (routed by the
 * embedding model like any request, or `fileSearch.embeddingsUrl`), ingestion workers, the expiry
 * sweeper and the retriever. The HTTP routes over them are mounted by the composition root (src/app.ts).
 */
export async function setUpFileSearch(config: Config, router: EmbeddingsRouter & ChatRouter, log: Logger): Promise<FileSearchService> {
  const settings = config.fileSearch;
  const store = await openFileSearchStore(config, log);
  const blobs = new BlobStore(config.files.dir ?? join(config.dataDir, 'files'));
  const embedder = settings.embeddingModel
    ? new HttpEmbedder({
        // a dedicated embeddings server when configured; else routed by model like any request
        post: settings.embeddingsUrl ? directEmbeddingsPost(settings.embeddingsUrl, settings.embeddingsApiKey ?? config.upstream.apiKey) : routedEmbeddingsPost(router),
        model: settings.embeddingModel,
        batchSize: settings.embeddingBatchSize,
      })
    : null;
  if (!embedder) log.warn({}, 'file_search: no embedding model configured (fileSearch.embeddingModel): vector stores are keyword-only');
  const pool = new ExtractionPool(Math.max(1, settings.workerThreads));
  const ingestion = new IngestionService({ store, blobs, pool, embedder, settings, log, singleProcess: config.store.kind === 'sqlite' });
  const retriever = new Retriever(store, embedder);
  await ingestion.start();
  const expiry = new ExpirySweeper({ store, blobs, log, intervalMs: settings.expirySweepMs, batchSize: settings.expiryBatchSize });
  expiry.start();
  return {
    store,
    blobs,
    ingestion,
    retriever,
    expiry,
    rewriter: settings.rewriteModel ? modelRewriter(router, settings.rewriteModel, log) : keywordRewriter,
    execution: fileSearchExecutionFactory(retriever, config.tools.timeoutsMs.file_search ?? FILE_SEARCH_TIMEOUT_MS),
    async close() {
      await expiry.close();
      await ingestion.close();
      await pool.close();
      await store.close();
    },
  };
}

/** The metadata/retrieval store on the configured backend, with its vector index (said in the log). */
async function openFileSearchStore(config: Config, log: Logger): Promise<FileSearchStore> {
  const mode = config.fileSearch.vectorIndex;
  if (config.store.kind === 'postgres') {
    if (mode === 'sqlite-vec') throw new Error("fileSearch.vectorIndex 'sqlite-vec' needs the SQLite store (PostgreSQL uses 'pgvector')");
    const store = await PostgresFileSearchStore.open(config.store.url!, { schema: config.store.schema, max: Math.max(2, Math.ceil((config.store.maxConnections ?? 10) / 2)), vectorIndex: mode, onError: (err) => log.warn({ err }, 'file_search store: idle connection error') });
    if (store.vectorIndexVersion) log.info({ pgvector: store.vectorIndexVersion }, 'file_search on PostgreSQL: keyword search by BM25 over tsvector postings; vector search by pgvector HNSW');
    else if (store.vectorIndexFallback) log.warn({ reason: store.vectorIndexFallback }, 'file_search on PostgreSQL WITHOUT A VECTOR INDEX: pgvector is missing, so every vector search scans all of a store\'s vectors in the gateway (fine for thousands of chunks, slow for millions); install pgvector (CREATE EXTENSION vector) or set fileSearch.vectorIndex: exact to silence this');
    else log.info({}, 'file_search on PostgreSQL: vector search by exact scan (fileSearch.vectorIndex: exact)');
    return store;
  }
  if (mode === 'pgvector') throw new Error("fileSearch.vectorIndex 'pgvector' needs the PostgreSQL store (SQLite uses 'sqlite-vec')");
  const store = new SqliteFileSearchStore(config.dataDir, { vectorIndex: mode });
  if (store.vectorIndexVersion) log.info({ sqliteVec: store.vectorIndexVersion, rebuiltVectors: store.vectorIndexRebuilt }, 'file_search on SQLite: vector search by sqlite-vec');
  else if (store.vectorIndexFallback) log.warn({ reason: store.vectorIndexFallback }, 'file_search on SQLite: sqlite-vec cannot be loaded here; vector search scans the stored vectors exactly');
  else log.info({}, 'file_search on SQLite: vector search by exact scan (fileSearch.vectorIndex: exact)');
  return store;
}
