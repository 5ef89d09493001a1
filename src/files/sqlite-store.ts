import type Database from 'better-sqlite3';
import { openDatabase } from '../store/sqlite-file.js';
import { createFileSearchTables } from './sqlite-schema.js';
import { SqliteVectorIndex, VectorIndexUnavailableError, wantsIndex } from './sqlite-vector-index.js';
import { batchFromRow, fileFromRow, packVectors, storeFileFromRow, storeFromRow, vectorBytes, type BatchRow, type FileRow, type StoreFileRow, type StoreRow } from './rows.js';
import {
  addCount,
  emptyCounts,
  type Attributes,
  type BatchRecord,
  type BatchView,
  type ChunkHit,
  type ChunkInput,
  type ChunkText,
  type FileRecord,
  type FileSearchStore,
  type IngestionJob,
  type ListOptions,
  type Page,
  type StoreFileRecord,
  type StoreFileStatus,
  type StoredVectors,
  type VectorHit,
  type VectorIndexKind,
  type VectorIndexMode,
  type VectorStoreRecord,
  type VectorStoreView,
} from './store.js';

export interface SqliteFileSearchOptions {
  /** `fileSearch.vectorIndex` (default `auto`). */
  vectorIndex?: VectorIndexMode;
  /** The sqlite-vec library to load instead of the npm package's (tests: one that does not exist). */
  extensionPath?: string;
}

/**
 * The embedded file_search store, in the gateway's SQLite file. Full text: one FTS5 table per
 * vector store (`fts_<store>`, porter + unicode61), so bm25 statistics are the store's own.
 * Vectors: float32 BLOBs in `fs_chunks`, the source of truth; searched through the sqlite-vec
 * index (src/files/sqlite-vector-index.ts) when it loads, else scanned exactly by the retriever.
 */
export class SqliteFileSearchStore implements FileSearchStore {
  private readonly db: Database.Database;
  private readonly ftsStatements = new Map<string, { insert: Database.Statement; search: Database.Statement; searchIn: Database.Statement }>();
  private readonly index: SqliteVectorIndex | null = null;
  readonly vectorIndex: VectorIndexKind;
  /** Why `auto` fell back to the exact scan (for the start-up log), or null. */
  readonly vectorIndexFallback: string | null = null;
  /** Vectors put back into the index at open because it had missed changes (0 = it was current). */
  readonly vectorIndexRebuilt: number = 0;

  constructor(dataDir: string | ':memory:', options: SqliteFileSearchOptions = {}) {
    this.db = openDatabase(dataDir);
    // the vector index reads every vector of a store per query: memory-mapped pages and a larger
    // cache (this connection only) keep that a scan of memory rather than of copied pages
    this.db.pragma('cache_size = -65536');
    this.db.pragma('mmap_size = 268435456');
    createFileSearchTables(this.db);
    const want = wantsIndex(options.vectorIndex ?? 'auto', 'sqlite-vec');
    if (want !== 'no') {
      try {
        this.index = SqliteVectorIndex.load(this.db, options.extensionPath);
      } catch (err) {
        if (want === 'require' || !(err instanceof VectorIndexUnavailableError)) {
          this.db.close();
          throw err;
        }
        this.vectorIndexFallback = err.message;
      }
    }
    this.vectorIndex = this.index ? 'sqlite-vec' : 'exact';
    if (this.index) {
      const index = this.index;
      this.vectorIndexRebuilt = this.db.transaction(() => {
        const generations = Object.fromEntries((this.db.prepare('SELECT key, value FROM fs_meta').all() as Array<{ key: string; value: number }>).map((r) => [r.key, r.value]));
        if (generations.chunks === generations.vec) return 0;
        const count = index.rebuild();
        this.db.prepare("UPDATE fs_meta SET value = (SELECT value FROM fs_meta WHERE key = 'chunks') WHERE key = 'vec'").run();
        return count;
      })();
    }
  }

  /** The sqlite-vec version in use, or null (exact scan). */
  get vectorIndexVersion(): string | null {
    return this.index?.version ?? null;
  }

  // ---------- files

  async insertFile(f: FileRecord): Promise<void> {
    this.db
      .prepare('INSERT INTO fs_files (id, owner, filename, purpose, bytes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(f.id, f.owner, f.filename, f.purpose, f.bytes, f.createdAt, f.expiresAt);
  }

  async getFile(owner: string, id: string): Promise<FileRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM fs_files WHERE owner = ? AND id = ?').get(owner, id) as FileRow | undefined;
    return row && fileFromRow(row);
  }

  async listFiles(owner: string, options: ListOptions & { purpose?: string }): Promise<Page<FileRecord>> {
    const rows = this.page<FileRow>('fs_files', 'owner = ?' + (options.purpose ? ' AND purpose = ?' : ''), options.purpose ? [owner, options.purpose] : [owner], options);
    return { data: rows.data.map(fileFromRow), hasMore: rows.hasMore };
  }

  async deleteFile(owner: string, id: string): Promise<boolean> {
    return this.db.transaction(() => {
      const stores = this.db.prepare('SELECT store_id FROM fs_store_files WHERE owner = ? AND file_id = ?').all(owner, id) as Array<{ store_id: string }>;
      for (const { store_id } of stores) this.detachInTx(owner, store_id, id);
      return this.db.prepare('DELETE FROM fs_files WHERE owner = ? AND id = ?').run(owner, id).changes > 0;
    })();
  }

  // ---------- vector stores

  async insertStore(s: VectorStoreRecord): Promise<void> {
    this.db
      .prepare('INSERT INTO fs_vector_stores (id, owner, name, created_at, last_active_at, metadata, expires_after, keyword_only_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(s.id, s.owner, s.name, s.createdAt, s.lastActiveAt, JSON.stringify(s.metadata), s.expiresAfter && JSON.stringify(s.expiresAfter), s.keywordOnlyReason);
  }

  async getStore(owner: string, id: string): Promise<VectorStoreView | undefined> {
    const row = this.db.prepare('SELECT * FROM fs_vector_stores WHERE owner = ? AND id = ?').get(owner, id) as StoreRow | undefined;
    return row && this.view(row);
  }

  async listStores(owner: string, options: ListOptions): Promise<Page<VectorStoreView>> {
    const rows = this.page<StoreRow>('fs_vector_stores', 'owner = ?', [owner], options);
    return { data: rows.data.map((r) => this.view(r)), hasMore: rows.hasMore };
  }

  async updateStore(owner: string, id: string, patch: Parameters<FileSearchStore['updateStore']>[2]): Promise<VectorStoreView | undefined> {
    const sets: string[] = [];
    const values: unknown[] = [];
    if (patch.name !== undefined) sets.push('name = ?'), values.push(patch.name);
    if (patch.metadata !== undefined) sets.push('metadata = ?'), values.push(JSON.stringify(patch.metadata));
    if (patch.expiresAfter !== undefined) sets.push('expires_after = ?'), values.push(patch.expiresAfter && JSON.stringify(patch.expiresAfter));
    if (patch.lastActiveAt !== undefined) sets.push('last_active_at = ?'), values.push(patch.lastActiveAt);
    if (patch.keywordOnlyReason !== undefined) sets.push('keyword_only_reason = ?'), values.push(patch.keywordOnlyReason);
    if (sets.length > 0) this.db.prepare(`UPDATE fs_vector_stores SET ${sets.join(', ')} WHERE owner = ? AND id = ?`).run(...values, owner, id);
    return this.getStore(owner, id);
  }

  async deleteStore(owner: string, id: string): Promise<boolean> {
    return this.db.transaction(() => {
      const deleted = this.db.prepare('DELETE FROM fs_vector_stores WHERE owner = ? AND id = ?').run(owner, id).changes > 0;
      if (!deleted) return false;
      this.db.prepare('DELETE FROM fs_store_files WHERE store_id = ?').run(id);
      this.db.prepare('DELETE FROM fs_batches WHERE store_id = ?').run(id);
      this.index?.deleteWhere('SELECT id FROM fs_chunks WHERE store_id = ?', id);
      this.db.prepare('DELETE FROM fs_chunks WHERE store_id = ?').run(id);
      this.chunksChanged();
      this.db.exec(`DROP TABLE IF EXISTS ${ftsTable(id)}`);
      this.ftsStatements.delete(id);
      return true;
    })();
  }

  // ---------- files in a store

  async attachFiles(owner: string, storeId: string, files: Parameters<FileSearchStore['attachFiles']>[2], now: number): Promise<void> {
    const upsert = this.db.prepare(`
      INSERT INTO fs_store_files (store_id, file_id, owner, batch_id, status, created_at, attributes, chunking)
      VALUES (?, ?, ?, ?, 'in_progress', ?, ?, ?)
      ON CONFLICT (store_id, file_id) DO UPDATE SET batch_id = excluded.batch_id, status = 'in_progress', created_at = excluded.created_at,
        attributes = excluded.attributes, chunking = excluded.chunking, usage_bytes = 0, last_error = NULL, claimed_by = NULL, claimed_until = NULL`);
    this.db.transaction(() => {
      for (const f of files) upsert.run(storeId, f.fileId, owner, f.batchId, now, JSON.stringify(f.attributes), JSON.stringify(f.chunking));
      this.db.prepare('UPDATE fs_vector_stores SET last_active_at = ? WHERE id = ?').run(now, storeId);
    })();
  }

  async getStoreFile(owner: string, storeId: string, fileId: string): Promise<StoreFileRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM fs_store_files WHERE owner = ? AND store_id = ? AND file_id = ?').get(owner, storeId, fileId) as StoreFileRow | undefined;
    return row && storeFileFromRow(row);
  }

  async listStoreFiles(owner: string, storeId: string, options: ListOptions & { status?: StoreFileStatus; batchId?: string }): Promise<Page<StoreFileRecord>> {
    let where = 'owner = ? AND store_id = ?';
    const values: unknown[] = [owner, storeId];
    if (options.status) (where += ' AND status = ?'), values.push(options.status);
    if (options.batchId) (where += ' AND batch_id = ?'), values.push(options.batchId);
    const rows = this.page<StoreFileRow>('fs_store_files', where, values, options, 'file_id');
    return { data: rows.data.map(storeFileFromRow), hasMore: rows.hasMore };
  }

  async storeFileAttributes(owner: string, storeId: string): Promise<Array<{ fileId: string; attributes: Attributes }>> {
    const rows = this.db.prepare("SELECT file_id, attributes FROM fs_store_files WHERE owner = ? AND store_id = ? AND status = 'completed'").all(owner, storeId) as Array<{ file_id: string; attributes: string }>;
    return rows.map((r) => ({ fileId: r.file_id, attributes: JSON.parse(r.attributes) as Attributes }));
  }

  async updateStoreFileAttributes(owner: string, storeId: string, fileId: string, attributes: Attributes): Promise<StoreFileRecord | undefined> {
    this.db.prepare('UPDATE fs_store_files SET attributes = ? WHERE owner = ? AND store_id = ? AND file_id = ?').run(JSON.stringify(attributes), owner, storeId, fileId);
    return this.getStoreFile(owner, storeId, fileId);
  }

  async detachFile(owner: string, storeId: string, fileId: string): Promise<boolean> {
    return this.db.transaction(() => this.detachInTx(owner, storeId, fileId))();
  }

  private detachInTx(owner: string, storeId: string, fileId: string): boolean {
    const removed = this.db.prepare('DELETE FROM fs_store_files WHERE owner = ? AND store_id = ? AND file_id = ?').run(owner, storeId, fileId).changes > 0;
    if (removed) this.deleteChunks(storeId, fileId);
    return removed;
  }

  // ---------- batches

  async insertBatch(b: BatchRecord): Promise<void> {
    this.db.prepare('INSERT INTO fs_batches (id, store_id, owner, created_at, cancelled) VALUES (?, ?, ?, ?, ?)').run(b.id, b.storeId, b.owner, b.createdAt, b.cancelled ? 1 : 0);
  }

  async getBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined> {
    const row = this.db.prepare('SELECT * FROM fs_batches WHERE owner = ? AND store_id = ? AND id = ?').get(owner, storeId, batchId) as BatchRow | undefined;
    if (!row) return undefined;
    const counts = emptyCounts();
    for (const r of this.db.prepare('SELECT status, COUNT(*) AS n FROM fs_store_files WHERE store_id = ? AND batch_id = ? GROUP BY status').all(storeId, batchId) as Array<{ status: string; n: number }>) addCount(counts, r.status, r.n);
    return { ...batchFromRow(row), fileCounts: counts };
  }

  async cancelBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined> {
    const found = this.db.transaction(() => {
      if (this.db.prepare('UPDATE fs_batches SET cancelled = 1 WHERE owner = ? AND store_id = ? AND id = ?').run(owner, storeId, batchId).changes === 0) return false;
      this.db.prepare("UPDATE fs_store_files SET status = 'cancelled', claimed_by = NULL, claimed_until = NULL WHERE store_id = ? AND batch_id = ? AND status = 'in_progress'").run(storeId, batchId);
      return true;
    })();
    return found ? this.getBatch(owner, storeId, batchId) : undefined;
  }

  // ---------- ingestion queue

  async claimJob(worker: string, now: number, leaseMs: number): Promise<IngestionJob | undefined> {
    const row = this.db
      .prepare(
        `UPDATE fs_store_files SET claimed_by = ?, claimed_until = ?
         WHERE seq = (SELECT seq FROM fs_store_files WHERE status = 'in_progress' AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY seq LIMIT 1)
         RETURNING store_id, file_id, owner, chunking`,
      )
      .get(worker, now + leaseMs, now) as { store_id: string; file_id: string; owner: string; chunking: string } | undefined;
    return row && { storeId: row.store_id, fileId: row.file_id, owner: row.owner, chunking: JSON.parse(row.chunking) };
  }

  async renewClaim(job: IngestionJob, worker: string, now: number, leaseMs: number): Promise<boolean> {
    return this.db.prepare("UPDATE fs_store_files SET claimed_until = ? WHERE store_id = ? AND file_id = ? AND claimed_by = ? AND status = 'in_progress'").run(now + leaseMs, job.storeId, job.fileId, worker).changes > 0;
  }

  async releaseClaims(worker: string): Promise<void> {
    if (worker === '*') this.db.prepare("UPDATE fs_store_files SET claimed_by = NULL, claimed_until = NULL WHERE status = 'in_progress'").run();
    else this.db.prepare('UPDATE fs_store_files SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?').run(worker);
  }

  async publishFile(job: IngestionJob, worker: string, chunks: ChunkInput[], usageBytes: number): Promise<boolean> {
    const insert = this.db.prepare('INSERT INTO fs_chunks (store_id, file_id, position, text, embedding) VALUES (?, ?, ?, ?, ?)');
    return this.db.transaction(() => {
      const done = this.db
        .prepare("UPDATE fs_store_files SET status = 'completed', usage_bytes = ?, last_error = NULL, claimed_by = NULL, claimed_until = NULL WHERE store_id = ? AND file_id = ? AND claimed_by = ? AND status = 'in_progress'")
        .run(usageBytes, job.storeId, job.fileId, worker);
      if (done.changes === 0) return false;
      this.deleteChunks(job.storeId, job.fileId);
      const fts = this.fts(job.storeId);
      chunks.forEach((chunk, position) => {
        const embedding = chunk.embedding ? vectorBytes(chunk.embedding) : null;
        const id = insert.run(job.storeId, job.fileId, position, chunk.text, embedding).lastInsertRowid;
        fts.insert.run(id, chunk.text);
        if (embedding && this.index) this.index.insert(job.storeId, job.fileId, id, embedding);
      });
      this.chunksChanged();
      this.db.prepare('UPDATE fs_vector_stores SET index_version = index_version + 1 WHERE id = ?').run(job.storeId);
      return true;
    })();
  }

  async failFile(job: IngestionJob, worker: string, error: { code: string; message: string }): Promise<void> {
    this.db
      .prepare("UPDATE fs_store_files SET status = 'failed', last_error = ?, claimed_by = NULL, claimed_until = NULL WHERE store_id = ? AND file_id = ? AND claimed_by = ? AND status = 'in_progress'")
      .run(JSON.stringify(error), job.storeId, job.fileId, worker);
  }

  // ---------- retrieval

  async indexVersion(storeId: string): Promise<number> {
    const row = this.db.prepare('SELECT index_version FROM fs_vector_stores WHERE id = ?').get(storeId) as { index_version: number } | undefined;
    return row?.index_version ?? -1;
  }

  async keywordSearch(storeId: string, terms: string[], fileIds: string[] | null, limit: number): Promise<ChunkHit[]> {
    if (terms.length === 0 || !this.ftsExists(storeId)) return [];
    // every term quoted: a question's punctuation and words like NOT/OR are never FTS5 syntax
    const match = terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR ');
    const fts = this.fts(storeId);
    const rows = (fileIds === null ? fts.search.all(match, limit) : fts.searchIn.all(match, JSON.stringify(fileIds), limit)) as Array<{ id: number; score: number }>;
    return rows.map((r) => ({ chunkId: r.id, score: r.score }));
  }

  async vectorSearch(storeId: string, query: Float32Array, fileIds: string[] | null, limit: number): Promise<VectorHit[]> {
    if (!this.index) throw new Error('no vector index is loaded (the retriever scans exactly)');
    return this.index.search(storeId, query, fileIds, limit);
  }

  async loadVectors(storeId: string): Promise<StoredVectors> {
    const rows = this.db.prepare('SELECT id, file_id, embedding FROM fs_chunks WHERE store_id = ? AND embedding IS NOT NULL ORDER BY id').all(storeId) as Array<{ id: number; file_id: string; embedding: Buffer }>;
    return packVectors(rows.map((r) => ({ id: r.id, fileId: r.file_id, bytes: r.embedding })));
  }

  async chunkTexts(chunkIds: number[]): Promise<ChunkText[]> {
    if (chunkIds.length === 0) return [];
    const rows = this.db.prepare('SELECT id, file_id, text FROM fs_chunks WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(chunkIds)) as Array<{ id: number; file_id: string; text: string }>;
    return rows.map((r) => ({ chunkId: r.id, fileId: r.file_id, text: r.text }));
  }

  async fileChunks(storeId: string, fileId: string): Promise<string[]> {
    return (this.db.prepare('SELECT text FROM fs_chunks WHERE store_id = ? AND file_id = ? ORDER BY position').all(storeId, fileId) as Array<{ text: string }>).map((r) => r.text);
  }

  // ---------- expiry

  async expiredFiles(now: number, limit: number): Promise<Array<{ owner: string; id: string }>> {
    return this.db.prepare('SELECT owner, id FROM fs_files WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, seq LIMIT ?').all(now, limit) as Array<{ owner: string; id: string }>;
  }

  async expiredStores(now: number, limit: number): Promise<Array<{ owner: string; id: string }>> {
    return this.db
      .prepare("SELECT owner, id FROM fs_vector_stores WHERE expires_after IS NOT NULL AND last_active_at + CAST(json_extract(expires_after, '$.days') AS INTEGER) * 86400 <= ? ORDER BY seq LIMIT ?")
      .all(now, limit) as Array<{ owner: string; id: string }>;
  }

  async close(): Promise<void> {
    this.db.close();
  }

  // ---------- helpers

  private view(row: StoreRow): VectorStoreView {
    const counts = emptyCounts();
    for (const r of this.db.prepare('SELECT status, COUNT(*) AS n FROM fs_store_files WHERE store_id = ? GROUP BY status').all(row.id) as Array<{ status: string; n: number }>) addCount(counts, r.status, r.n);
    const usage = this.db.prepare("SELECT COALESCE(SUM(usage_bytes), 0) AS bytes FROM fs_store_files WHERE store_id = ? AND status = 'completed'").get(row.id) as { bytes: number };
    return { ...storeFromRow(row), fileCounts: counts, usageBytes: usage.bytes };
  }

  private deleteChunks(storeId: string, fileId: string): void {
    if (this.ftsExists(storeId)) this.db.prepare(`DELETE FROM ${ftsTable(storeId)} WHERE rowid IN (SELECT id FROM fs_chunks WHERE store_id = ? AND file_id = ?)`).run(storeId, fileId);
    this.index?.deleteWhere('SELECT id FROM fs_chunks WHERE store_id = ? AND file_id = ?', storeId, fileId);
    const removed = this.db.prepare('DELETE FROM fs_chunks WHERE store_id = ? AND file_id = ?').run(storeId, fileId).changes;
    if (removed > 0) {
      this.db.prepare('UPDATE fs_vector_stores SET index_version = index_version + 1 WHERE id = ?').run(storeId);
      this.chunksChanged();
    }
  }

  /** Within the transaction that changed fs_chunks: moves the chunk generation (and the index's, when it took the change). */
  private chunksChanged(): void {
    this.db.prepare("UPDATE fs_meta SET value = value + 1 WHERE key = 'chunks'").run();
    if (this.index) this.db.prepare("UPDATE fs_meta SET value = (SELECT value FROM fs_meta WHERE key = 'chunks') WHERE key = 'vec'").run();
  }

  private ftsExists(storeId: string): boolean {
    return this.ftsStatements.has(storeId) || this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(ftsTable(storeId)) !== undefined;
  }

  private fts(storeId: string): { insert: Database.Statement; search: Database.Statement; searchIn: Database.Statement } {
    let statements = this.ftsStatements.get(storeId);
    if (!statements) {
      const table = ftsTable(storeId);
      this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')`);
      statements = {
        insert: this.db.prepare(`INSERT INTO ${table} (rowid, text) VALUES (?, ?)`),
        // bm25() is negative (smaller is better): negated so larger is better everywhere
        search: this.db.prepare(`SELECT rowid AS id, -bm25(${table}) AS score FROM ${table} WHERE ${table} MATCH ? ORDER BY bm25(${table}) LIMIT ?`),
        searchIn: this.db.prepare(
          `SELECT f.rowid AS id, -bm25(${table}) AS score FROM ${table} f JOIN fs_chunks c ON c.id = f.rowid
           WHERE ${table} MATCH ? AND c.file_id IN (SELECT value FROM json_each(?)) ORDER BY bm25(${table}) LIMIT ?`,
        ),
      };
      this.ftsStatements.set(storeId, statements);
    }
    return statements;
  }

  /** One page of a table ordered by insertion (`seq`), after/before an id (the cursor). */
  private page<R>(table: string, where: string, values: unknown[], options: ListOptions, idColumn = 'id'): Page<R> {
    let sql = `SELECT * FROM ${table} WHERE ${where}`;
    const args = [...values];
    const desc = options.order === 'desc';
    if (options.after) (sql += ` AND seq ${desc ? '<' : '>'} COALESCE((SELECT seq FROM ${table} WHERE ${where} AND ${idColumn} = ?), ${desc ? -1 : '9223372036854775807'})`), args.push(...values, options.after);
    if (options.before) (sql += ` AND seq ${desc ? '>' : '<'} COALESCE((SELECT seq FROM ${table} WHERE ${where} AND ${idColumn} = ?), ${desc ? '9223372036854775807' : -1})`), args.push(...values, options.before);
    sql += ` ORDER BY seq ${desc ? 'DESC' : 'ASC'} LIMIT ?`;
    args.push(options.limit + 1);
    const rows = this.db.prepare(sql).all(...args) as R[];
    return { data: rows.slice(0, options.limit), hasMore: rows.length > options.limit };
  }
}

/** The FTS5 table of one vector store (ids are `vs_` + hex: safe as an identifier). */
function ftsTable(storeId: string): string {
  return `fts_${storeId.replace(/[^A-Za-z0-9_]/g, '_')}`;
}
