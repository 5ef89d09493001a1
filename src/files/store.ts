/**
 * Metadata of the Files and Vector Stores APIs and the retrieval index behind file_search, as one
 * narrow interface with two implementations (SQLite embedded, PostgreSQL for replicas) that pass
 * one conformance suite (test/files/file-search-store.test.ts).
 *
 * One interface rather than two because a file's chunks are published in the same transaction
 * that marks it `completed`: a reader sees all of a file or none of it.
 *
 * Every object carries an `owner`: the tenant of the API key that made it (DEFAULT_OWNER while
 * authentication is off). Every read and write is scoped by it: another tenant's object is absent.
 */

export const DEFAULT_OWNER = 'default';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type Attributes = Record<string, string | number | boolean>;

export interface FileRecord {
  id: string;
  owner: string;
  filename: string;
  purpose: string;
  bytes: number;
  createdAt: number;
  expiresAt: number | null;
}

export interface ChunkingStrategy {
  type: 'static';
  maxChunkSizeTokens: number;
  chunkOverlapTokens: number;
}

export interface ExpiresAfter {
  anchor: 'last_active_at';
  days: number;
}

export interface VectorStoreRecord {
  id: string;
  owner: string;
  name: string | null;
  createdAt: number;
  lastActiveAt: number;
  metadata: Record<string, string>;
  expiresAfter: ExpiresAfter | null;
  /** Why the store answers keyword-only (no embedder), said once in its metadata view. */
  keywordOnlyReason: string | null;
}

export interface FileCounts {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

export interface VectorStoreView extends VectorStoreRecord {
  fileCounts: FileCounts;
  usageBytes: number;
}

export type StoreFileStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

export interface StoreFileRecord {
  storeId: string;
  fileId: string;
  owner: string;
  batchId: string | null;
  status: StoreFileStatus;
  createdAt: number;
  attributes: Attributes;
  chunking: ChunkingStrategy;
  usageBytes: number;
  lastError: { code: string; message: string } | null;
}

export interface BatchRecord {
  id: string;
  storeId: string;
  owner: string;
  createdAt: number;
  cancelled: boolean;
}

export interface BatchView extends BatchRecord {
  fileCounts: FileCounts;
}

export interface ListOptions {
  limit: number;
  order: 'asc' | 'desc';
  after?: string;
  before?: string;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

/** A queued ingestion: one file in one store, claimed by one gateway process at a time. */
export interface IngestionJob {
  storeId: string;
  fileId: string;
  owner: string;
  chunking: ChunkingStrategy;
}

export interface ChunkInput {
  text: string;
  /** Unit-length float32 embedding; absent when the store is keyword-only. */
  embedding?: Float32Array;
}

export interface ChunkHit {
  chunkId: number;
  /** Raw backend relevance (bm25 / ts_rank), larger is better. */
  score: number;
}

export interface ChunkText {
  chunkId: number;
  fileId: string;
  text: string;
}

export interface StoredVectors {
  chunkIds: Int32Array | number[];
  fileIds: string[];
  /** Row-major, `dimensions` floats per chunk. */
  matrix: Float32Array;
  dimensions: number;
}

/** `fileSearch.vectorIndex`: the backend's index when it loads (`auto`), a required one, or none. */
export type VectorIndexMode = 'auto' | 'sqlite-vec' | 'pgvector' | 'exact';
/** The vector search a store actually uses: an index in the database, or the retriever's exact scan. */
export type VectorIndexKind = 'sqlite-vec' | 'pgvector' | 'exact';

export interface VectorHit {
  chunkId: number;
  fileId: string;
  /** Cosine similarity, > 0. */
  similarity: number;
}

export interface FileSearchStore {
  /** `exact`: the retriever scans `loadVectors` itself; otherwise `vectorSearch` asks the database's index. */
  readonly vectorIndex: VectorIndexKind;

  // ---- files
  insertFile(file: FileRecord): Promise<void>;
  getFile(owner: string, id: string): Promise<FileRecord | undefined>;
  listFiles(owner: string, options: ListOptions & { purpose?: string }): Promise<Page<FileRecord>>;
  /** Deletes the file and detaches it from every store (its chunks go too). */
  deleteFile(owner: string, id: string): Promise<boolean>;

  // ---- vector stores
  insertStore(store: VectorStoreRecord): Promise<void>;
  getStore(owner: string, id: string): Promise<VectorStoreView | undefined>;
  listStores(owner: string, options: ListOptions): Promise<Page<VectorStoreView>>;
  updateStore(owner: string, id: string, patch: { name?: string | null; metadata?: Record<string, string>; expiresAfter?: ExpiresAfter | null; lastActiveAt?: number; keywordOnlyReason?: string | null }): Promise<VectorStoreView | undefined>;
  deleteStore(owner: string, id: string): Promise<boolean>;

  // ---- files in a store
  /** Attaches (or re-attaches, restarting ingestion) files; each becomes `in_progress`. */
  attachFiles(owner: string, storeId: string, files: Array<{ fileId: string; attributes: Attributes; chunking: ChunkingStrategy; batchId: string | null }>, now: number): Promise<void>;
  getStoreFile(owner: string, storeId: string, fileId: string): Promise<StoreFileRecord | undefined>;
  listStoreFiles(owner: string, storeId: string, options: ListOptions & { status?: StoreFileStatus; batchId?: string }): Promise<Page<StoreFileRecord>>;
  /** Every file of a store with its attributes (for filters, applied before ranking). */
  storeFileAttributes(owner: string, storeId: string): Promise<Array<{ fileId: string; attributes: Attributes }>>;
  updateStoreFileAttributes(owner: string, storeId: string, fileId: string, attributes: Attributes): Promise<StoreFileRecord | undefined>;
  detachFile(owner: string, storeId: string, fileId: string): Promise<boolean>;

  // ---- file batches
  insertBatch(batch: BatchRecord): Promise<void>;
  getBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined>;
  /** Marks the batch cancelled and every file of it still in progress `cancelled`. */
  cancelBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined>;

  // ---- ingestion queue (durable: the in_progress rows are the queue)
  /** Claims one unclaimed (or lease-expired) in_progress file for `worker` until `now + leaseMs`. */
  claimJob(worker: string, now: number, leaseMs: number): Promise<IngestionJob | undefined>;
  /** Extends the worker's leases; false when this job was taken away (detached, cancelled). */
  renewClaim(job: IngestionJob, worker: string, now: number, leaseMs: number): Promise<boolean>;
  /** Gives back every claim of `worker` (shutdown) — or of every worker (`'*'`, SQLite start). */
  releaseClaims(worker: string): Promise<void>;
  /**
   * Publishes a file's chunks and marks it completed, in one transaction — only while the file is
   * still in progress and claimed by `worker` (else nothing is written and false is returned).
   */
  publishFile(job: IngestionJob, worker: string, chunks: ChunkInput[], usageBytes: number): Promise<boolean>;
  /** Records a failure (`last_error`) for a file still claimed by `worker`. */
  failFile(job: IngestionJob, worker: string, error: { code: string; message: string }): Promise<void>;

  // ---- retrieval
  /** A number that changes whenever the store's chunks change (vector caches key on it). */
  indexVersion(storeId: string): Promise<number>;
  /** Full-text matches of any of `terms` (already sanitised words), best first. */
  keywordSearch(storeId: string, terms: string[], fileIds: string[] | null, limit: number): Promise<ChunkHit[]>;
  /** The `limit` nearest chunks by cosine similarity among `fileIds` (null = all), best first; only when `vectorIndex` is not `exact`. */
  vectorSearch(storeId: string, query: Float32Array, fileIds: string[] | null, limit: number): Promise<VectorHit[]>;
  /** Every embedding of the store (the source of truth for the exact scan). */
  loadVectors(storeId: string): Promise<StoredVectors>;
  chunkTexts(chunkIds: number[]): Promise<ChunkText[]>;
  fileChunks(storeId: string, fileId: string): Promise<string[]>;

  // ---- expiry (the sweeper deletes what these return, a bounded batch at a time)
  /** Files whose `expires_at` (seconds) is at or before `now`, oldest first, at most `limit`. */
  expiredFiles(now: number, limit: number): Promise<Array<{ owner: string; id: string }>>;
  /** Vector stores idle past `expires_after` (`last_active_at + days`), at or before `now`, at most `limit`. */
  expiredStores(now: number, limit: number): Promise<Array<{ owner: string; id: string }>>;

  close(): Promise<void>;
}

/** An empty set of counts. */
export function emptyCounts(): FileCounts {
  return { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 };
}

/** Adds one `(status, count)` row to the counts. */
export function addCount(counts: FileCounts, status: string, n: number): void {
  if (status === 'in_progress' || status === 'completed' || status === 'failed' || status === 'cancelled') counts[status] += n;
  counts.total += n;
}
