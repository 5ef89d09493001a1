/** Operator settings of file_search ingestion and retrieval (config `fileSearch`). */
export interface FileSearchSettings {
  /** The embedding model sent to `/v1/embeddings`; null = keyword-only search. */
  embeddingModel: string | null;
  /** Base URL (with `/v1`) of the embeddings server; null = the upstream's. */
  embeddingsUrl: string | null;
  /** API key for the embeddings server; null = the upstream's key. */
  embeddingsApiKey: string | null;
  /** Texts per `/v1/embeddings` request. */
  embeddingBatchSize: number;
  /** The embedder's context limit in tokens: longer chunks are refused before sending. */
  embeddingMaxTokens: number;
  /** Files ingested at once by this gateway process. */
  ingestionConcurrency: number;
  /** Worker threads for text extraction and chunking. */
  workerThreads: number;
  /** `openai-poll-after-ms` sent on in-progress objects (SDK polling helpers sleep that long). */
  pollAfterMs: number;
  /** How long an ingestion claim lasts without renewal (a dead replica's work is retried after it). */
  claimLeaseMs: number;
  /** The model that rewrites `rewrite_query` searches; null = the deterministic keyword rewrite. */
  rewriteModel: string | null;
  /** The vector index: the backend's when it loads (`auto`), a required one, or the exact scan. */
  vectorIndex: 'auto' | 'sqlite-vec' | 'pgvector' | 'exact';
  /** Time between expiry sweeps (expired files and vector stores are deleted). */
  expirySweepMs: number;
  /** Expired objects deleted per batch. */
  expiryBatchSize: number;
}

export const DEFAULT_FILE_SEARCH_SETTINGS: FileSearchSettings = {
  embeddingModel: 'text-embedding-3-small',
  embeddingsUrl: null,
  embeddingsApiKey: null,
  embeddingBatchSize: 64,
  embeddingMaxTokens: 8191,
  ingestionConcurrency: 2,
  workerThreads: 1,
  pollAfterMs: 200,
  claimLeaseMs: 30_000,
  rewriteModel: null,
  vectorIndex: 'auto',
  expirySweepMs: 60_000,
  expiryBatchSize: 100,
};
