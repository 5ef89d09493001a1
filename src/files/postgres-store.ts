import type pg from 'pg';
import { createPool, migrateUnderLock, quoteIdent, withTransaction, type PostgresStoreOptions } from '../store/postgres.js';
import { batchFromRow, fileFromRow, packVectors, storeFileFromRow, storeFromRow, vectorBytes, type BatchRow, type FileRow, type StoreFileRow, type StoreRow } from './rows.js';
import { PgvectorIndex } from './postgres-vector-index.js';
import { adjustCounts, bm25Search, indexTerms } from './postgres-bm25.js';
import { fileSearchSchemaSql } from './postgres-schema.js';
import { wantsIndex } from './sqlite-vector-index.js';
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


export interface PostgresFileSearchOptions extends PostgresStoreOptions {
  /** `fileSearch.vectorIndex` (default `auto`: pgvector when the server has it). */
  vectorIndex?: VectorIndexMode;
}

/**
 * The file_search store on PostgreSQL, shared by gateway replicas. Full text: a generated
 * `tsvector` column with a GIN index (one table, every query scoped by store). Vectors: float32
 * `bytea` (the source of truth), searched through pgvector HNSW when the server has the
 * extension (src/files/postgres-vector-index.ts), else scanned exactly by the retriever.
 * The ingestion queue is claimed with `FOR UPDATE SKIP LOCKED` and leases, so replicas share it.
 */
export class PostgresFileSearchStore implements FileSearchStore {
  private index: PgvectorIndex | null = null;
  /** Why `auto` fell back to the exact scan (for the start-up warning), or null. */
  vectorIndexFallback: string | null = null;

  private constructor(
    readonly pool: pg.Pool,
    private readonly s: string,
    private readonly ownsPool: boolean,
  ) {}

  get vectorIndex(): VectorIndexKind {
    return this.index ? 'pgvector' : 'exact';
  }

  /** The pgvector version in use, or null (exact scan). */
  get vectorIndexVersion(): string | null {
    return this.index?.version ?? null;
  }

  static async open(url: string, options: PostgresFileSearchOptions = {}): Promise<PostgresFileSearchStore> {
    const pool = createPool(url, options);
    try {
      return await PostgresFileSearchStore.fromPool(pool, options.schema ?? 'public', true, options.vectorIndex ?? 'auto');
    } catch (error) {
      await pool.end();
      throw error;
    }
  }

  static async fromPool(pool: pg.Pool, schema: string, ownsPool = false, vectorIndex: VectorIndexMode = 'auto'): Promise<PostgresFileSearchStore> {
    const s = quoteIdent(schema);
    await migrateUnderLock(pool, schema, fileSearchSchemaSql(s));
    const store = new PostgresFileSearchStore(pool, s, ownsPool);
    const want = wantsIndex(vectorIndex, 'pgvector');
    if (want !== 'no') {
      try {
        store.index = await PgvectorIndex.enable(pool, s);
        await store.index.backfill();
      } catch (err) {
        if (want === 'require') throw new Error(`fileSearch.vectorIndex is 'pgvector' but the extension cannot be used: ${(err as Error).message}`);
        store.vectorIndexFallback = `pgvector is not available on this server (${(err as Error).message})`;
      }
    }
    return store;
  }

  private async rows<R>(sql: string, values: unknown[] = [], client: pg.Pool | pg.PoolClient = this.pool): Promise<R[]> {
    return (await client.query(sql, values)).rows as R[];
  }

  // ---------- files

  async insertFile(f: FileRecord): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.s}.fs_files (id, owner, filename, purpose, bytes, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [f.id, f.owner, f.filename, f.purpose, f.bytes, f.createdAt, f.expiresAt]);
  }

  async getFile(owner: string, id: string): Promise<FileRecord | undefined> {
    const [row] = await this.rows<FileRow>(`SELECT * FROM ${this.s}.fs_files WHERE owner = $1 AND id = $2`, [owner, id]);
    return row && fileFromRow(row);
  }

  async listFiles(owner: string, options: ListOptions & { purpose?: string }): Promise<Page<FileRecord>> {
    const page = await this.page<FileRow>('fs_files', options.purpose ? ['owner', 'purpose'] : ['owner'], options.purpose ? [owner, options.purpose] : [owner], options);
    return { data: page.data.map(fileFromRow), hasMore: page.hasMore };
  }

  async deleteFile(owner: string, id: string): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const stores = await this.rows<{ store_id: string }>(`SELECT store_id FROM ${this.s}.fs_store_files WHERE owner = $1 AND file_id = $2`, [owner, id], client);
      for (const { store_id } of stores) await this.detachInTx(client, owner, store_id, id);
      return ((await client.query(`DELETE FROM ${this.s}.fs_files WHERE owner = $1 AND id = $2`, [owner, id])).rowCount ?? 0) > 0;
    });
  }

  // ---------- vector stores

  async insertStore(v: VectorStoreRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.s}.fs_vector_stores (id, owner, name, created_at, last_active_at, metadata, expires_after, keyword_only_reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [v.id, v.owner, v.name, v.createdAt, v.lastActiveAt, JSON.stringify(v.metadata), v.expiresAfter && JSON.stringify(v.expiresAfter), v.keywordOnlyReason],
    );
  }

  async getStore(owner: string, id: string): Promise<VectorStoreView | undefined> {
    const [row] = await this.rows<StoreRow>(`SELECT * FROM ${this.s}.fs_vector_stores WHERE owner = $1 AND id = $2`, [owner, id]);
    return row && this.view(row);
  }

  async listStores(owner: string, options: ListOptions): Promise<Page<VectorStoreView>> {
    const page = await this.page<StoreRow>('fs_vector_stores', ['owner'], [owner], options);
    return { data: await Promise.all(page.data.map((r) => this.view(r))), hasMore: page.hasMore };
  }

  async updateStore(owner: string, id: string, patch: Parameters<FileSearchStore['updateStore']>[2]): Promise<VectorStoreView | undefined> {
    const sets: string[] = [];
    const values: unknown[] = [];
    const set = (column: string, value: unknown) => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    if (patch.name !== undefined) set('name', patch.name);
    if (patch.metadata !== undefined) set('metadata', JSON.stringify(patch.metadata));
    if (patch.expiresAfter !== undefined) set('expires_after', patch.expiresAfter && JSON.stringify(patch.expiresAfter));
    if (patch.lastActiveAt !== undefined) set('last_active_at', patch.lastActiveAt);
    if (patch.keywordOnlyReason !== undefined) set('keyword_only_reason', patch.keywordOnlyReason);
    if (sets.length > 0) await this.pool.query(`UPDATE ${this.s}.fs_vector_stores SET ${sets.join(', ')} WHERE owner = $${values.length + 1} AND id = $${values.length + 2}`, [...values, owner, id]);
    return this.getStore(owner, id);
  }

  async deleteStore(owner: string, id: string): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const deleted = (await client.query(`DELETE FROM ${this.s}.fs_vector_stores WHERE owner = $1 AND id = $2`, [owner, id])).rowCount ?? 0;
      if (deleted === 0) return false;
      await client.query(`DELETE FROM ${this.s}.fs_store_files WHERE store_id = $1`, [id]);
      await client.query(`DELETE FROM ${this.s}.fs_batches WHERE store_id = $1`, [id]);
      await client.query(`DELETE FROM ${this.s}.fs_chunks WHERE store_id = $1`, [id]);
      return true;
    });
  }

  // ---------- files in a store

  async attachFiles(owner: string, storeId: string, files: Parameters<FileSearchStore['attachFiles']>[2], now: number): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      for (const f of files) {
        await client.query(
          `INSERT INTO ${this.s}.fs_store_files (store_id, file_id, owner, batch_id, status, created_at, attributes, chunking)
           VALUES ($1, $2, $3, $4, 'in_progress', $5, $6, $7)
           ON CONFLICT (store_id, file_id) DO UPDATE SET batch_id = excluded.batch_id, status = 'in_progress', created_at = excluded.created_at,
             attributes = excluded.attributes, chunking = excluded.chunking, usage_bytes = 0, last_error = NULL, claimed_by = NULL, claimed_until = NULL`,
          [storeId, f.fileId, owner, f.batchId, now, JSON.stringify(f.attributes), JSON.stringify(f.chunking)],
        );
      }
      await client.query(`UPDATE ${this.s}.fs_vector_stores SET last_active_at = $1 WHERE id = $2`, [now, storeId]);
    });
  }

  async getStoreFile(owner: string, storeId: string, fileId: string): Promise<StoreFileRecord | undefined> {
    const [row] = await this.rows<StoreFileRow>(`SELECT * FROM ${this.s}.fs_store_files WHERE owner = $1 AND store_id = $2 AND file_id = $3`, [owner, storeId, fileId]);
    return row && storeFileFromRow(row);
  }

  async listStoreFiles(owner: string, storeId: string, options: ListOptions & { status?: StoreFileStatus; batchId?: string }): Promise<Page<StoreFileRecord>> {
    const columns = ['owner', 'store_id'];
    const values: unknown[] = [owner, storeId];
    if (options.status) columns.push('status'), values.push(options.status);
    if (options.batchId) columns.push('batch_id'), values.push(options.batchId);
    const page = await this.page<StoreFileRow>('fs_store_files', columns, values, options, 'file_id');
    return { data: page.data.map(storeFileFromRow), hasMore: page.hasMore };
  }

  async storeFileAttributes(owner: string, storeId: string): Promise<Array<{ fileId: string; attributes: Attributes }>> {
    const rows = await this.rows<{ file_id: string; attributes: string }>(`SELECT file_id, attributes FROM ${this.s}.fs_store_files WHERE owner = $1 AND store_id = $2 AND status = 'completed'`, [owner, storeId]);
    return rows.map((r) => ({ fileId: r.file_id, attributes: JSON.parse(r.attributes) as Attributes }));
  }

  async updateStoreFileAttributes(owner: string, storeId: string, fileId: string, attributes: Attributes): Promise<StoreFileRecord | undefined> {
    await this.pool.query(`UPDATE ${this.s}.fs_store_files SET attributes = $1 WHERE owner = $2 AND store_id = $3 AND file_id = $4`, [JSON.stringify(attributes), owner, storeId, fileId]);
    return this.getStoreFile(owner, storeId, fileId);
  }

  async detachFile(owner: string, storeId: string, fileId: string): Promise<boolean> {
    return withTransaction(this.pool, (client) => this.detachInTx(client, owner, storeId, fileId));
  }

  private async detachInTx(client: pg.PoolClient, owner: string, storeId: string, fileId: string): Promise<boolean> {
    const removed = (await client.query(`DELETE FROM ${this.s}.fs_store_files WHERE owner = $1 AND store_id = $2 AND file_id = $3`, [owner, storeId, fileId])).rowCount ?? 0;
    if (removed > 0) await this.deleteChunks(client, storeId, fileId);
    return removed > 0;
  }

  // ---------- batches

  async insertBatch(b: BatchRecord): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.s}.fs_batches (id, store_id, owner, created_at, cancelled) VALUES ($1, $2, $3, $4, $5)`, [b.id, b.storeId, b.owner, b.createdAt, b.cancelled]);
  }

  async getBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined> {
    const [row] = await this.rows<BatchRow>(`SELECT * FROM ${this.s}.fs_batches WHERE owner = $1 AND store_id = $2 AND id = $3`, [owner, storeId, batchId]);
    if (!row) return undefined;
    const counts = emptyCounts();
    for (const r of await this.rows<{ status: string; n: string }>(`SELECT status, COUNT(*) AS n FROM ${this.s}.fs_store_files WHERE store_id = $1 AND batch_id = $2 GROUP BY status`, [storeId, batchId])) addCount(counts, r.status, Number(r.n));
    return { ...batchFromRow(row), fileCounts: counts };
  }

  async cancelBatch(owner: string, storeId: string, batchId: string): Promise<BatchView | undefined> {
    const found = await withTransaction(this.pool, async (client) => {
      if (((await client.query(`UPDATE ${this.s}.fs_batches SET cancelled = TRUE WHERE owner = $1 AND store_id = $2 AND id = $3`, [owner, storeId, batchId])).rowCount ?? 0) === 0) return false;
      await client.query(`UPDATE ${this.s}.fs_store_files SET status = 'cancelled', claimed_by = NULL, claimed_until = NULL WHERE store_id = $1 AND batch_id = $2 AND status = 'in_progress'`, [storeId, batchId]);
      return true;
    });
    return found ? this.getBatch(owner, storeId, batchId) : undefined;
  }

  // ---------- ingestion queue

  async claimJob(worker: string, now: number, leaseMs: number): Promise<IngestionJob | undefined> {
    const [row] = await this.rows<{ store_id: string; file_id: string; owner: string; chunking: string }>(
      `UPDATE ${this.s}.fs_store_files SET claimed_by = $1, claimed_until = $2
       WHERE seq = (SELECT seq FROM ${this.s}.fs_store_files WHERE status = 'in_progress' AND (claimed_until IS NULL OR claimed_until < $3) ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING store_id, file_id, owner, chunking`,
      [worker, now + leaseMs, now],
    );
    return row && { storeId: row.store_id, fileId: row.file_id, owner: row.owner, chunking: JSON.parse(row.chunking) };
  }

  async renewClaim(job: IngestionJob, worker: string, now: number, leaseMs: number): Promise<boolean> {
    const result = await this.pool.query(`UPDATE ${this.s}.fs_store_files SET claimed_until = $1 WHERE store_id = $2 AND file_id = $3 AND claimed_by = $4 AND status = 'in_progress'`, [now + leaseMs, job.storeId, job.fileId, worker]);
    return (result.rowCount ?? 0) > 0;
  }

  async releaseClaims(worker: string): Promise<void> {
    if (worker === '*') await this.pool.query(`UPDATE ${this.s}.fs_store_files SET claimed_by = NULL, claimed_until = NULL WHERE status = 'in_progress'`);
    else await this.pool.query(`UPDATE ${this.s}.fs_store_files SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = $1`, [worker]);
  }

  async publishFile(job: IngestionJob, worker: string, chunks: ChunkInput[], usageBytes: number): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const done = await client.query(
        `UPDATE ${this.s}.fs_store_files SET status = 'completed', usage_bytes = $1, last_error = NULL, claimed_by = NULL, claimed_until = NULL
         WHERE store_id = $2 AND file_id = $3 AND claimed_by = $4 AND status = 'in_progress'`,
        [usageBytes, job.storeId, job.fileId, worker],
      );
      if ((done.rowCount ?? 0) === 0) return false;
      await this.deleteChunks(client, job.storeId, job.fileId);
      // multi-row inserts, a few hundred rows a statement (bind parameters are capped at 65 535)
      for (let start = 0; start < chunks.length; start += 500) {
        const slice = chunks.slice(start, start + 500);
        const values: unknown[] = [];
        const tuples = slice.map((chunk, i) => {
          values.push(job.storeId, job.fileId, start + i, chunk.text, chunk.embedding ? vectorBytes(chunk.embedding) : null);
          const b = i * 5;
          return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5})`;
        });
        await client.query(`INSERT INTO ${this.s}.fs_chunks (store_id, file_id, position, text, embedding) VALUES ${tuples.join(', ')}`, values);
      }
      await indexTerms(client, this.s, job.storeId, job.fileId);
      if (this.index) await this.index.afterInsert(client, job.storeId, job.fileId, chunks.map((c) => c.embedding));
      await client.query(`UPDATE ${this.s}.fs_vector_stores SET index_version = index_version + 1 WHERE id = $1`, [job.storeId]);
      return true;
    });
  }

  async failFile(job: IngestionJob, worker: string, error: { code: string; message: string }): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.s}.fs_store_files SET status = 'failed', last_error = $1, claimed_by = NULL, claimed_until = NULL WHERE store_id = $2 AND file_id = $3 AND claimed_by = $4 AND status = 'in_progress'`,
      [JSON.stringify(error), job.storeId, job.fileId, worker],
    );
  }

  // ---------- retrieval

  async indexVersion(storeId: string): Promise<number> {
    const [row] = await this.rows<{ index_version: string }>(`SELECT index_version FROM ${this.s}.fs_vector_stores WHERE id = $1`, [storeId]);
    return row ? Number(row.index_version) : -1;
  }

  async keywordSearch(storeId: string, terms: string[], fileIds: string[] | null, limit: number): Promise<ChunkHit[]> {
    return bm25Search(this.pool, this.s, storeId, terms, fileIds, limit);
  }

  async vectorSearch(storeId: string, query: Float32Array, fileIds: string[] | null, limit: number): Promise<VectorHit[]> {
    if (!this.index) throw new Error('pgvector is not in use (the retriever scans exactly)');
    return this.index.search(storeId, query, fileIds, limit);
  }

  async loadVectors(storeId: string): Promise<StoredVectors> {
    const rows = await this.rows<{ id: number; file_id: string; embedding: Buffer }>(`SELECT id, file_id, embedding FROM ${this.s}.fs_chunks WHERE store_id = $1 AND embedding IS NOT NULL ORDER BY id`, [storeId]);
    return packVectors(rows.map((r) => ({ id: r.id, fileId: r.file_id, bytes: r.embedding })));
  }

  async chunkTexts(chunkIds: number[]): Promise<ChunkText[]> {
    if (chunkIds.length === 0) return [];
    const rows = await this.rows<{ id: number; file_id: string; text: string }>(`SELECT id, file_id, text FROM ${this.s}.fs_chunks WHERE id = ANY($1::int[])`, [chunkIds]);
    return rows.map((r) => ({ chunkId: r.id, fileId: r.file_id, text: r.text }));
  }

  async fileChunks(storeId: string, fileId: string): Promise<string[]> {
    return (await this.rows<{ text: string }>(`SELECT text FROM ${this.s}.fs_chunks WHERE store_id = $1 AND file_id = $2 ORDER BY position`, [storeId, fileId])).map((r) => r.text);
  }

  // ---------- expiry

  async expiredFiles(now: number, limit: number): Promise<Array<{ owner: string; id: string }>> {
    return this.rows(`SELECT owner, id FROM ${this.s}.fs_files WHERE expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at, seq LIMIT $2`, [now, limit]);
  }

  async expiredStores(now: number, limit: number): Promise<Array<{ owner: string; id: string }>> {
    return this.rows(
      `SELECT owner, id FROM ${this.s}.fs_vector_stores WHERE expires_after IS NOT NULL AND last_active_at + ((expires_after::jsonb ->> 'days')::bigint * 86400) <= $1 ORDER BY seq LIMIT $2`,
      [now, limit],
    );
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  // ---------- helpers

  private async view(row: StoreRow): Promise<VectorStoreView> {
    const counts = emptyCounts();
    let usage = 0;
    for (const r of await this.rows<{ status: string; n: string; bytes: string }>(`SELECT status, COUNT(*) AS n, COALESCE(SUM(usage_bytes), 0) AS bytes FROM ${this.s}.fs_store_files WHERE store_id = $1 GROUP BY status`, [row.id])) {
      addCount(counts, r.status, Number(r.n));
      if (r.status === 'completed') usage = Number(r.bytes);
    }
    return { ...storeFromRow(row), fileCounts: counts, usageBytes: usage };
  }

  private async deleteChunks(client: pg.PoolClient, storeId: string, fileId: string): Promise<void> {
    await adjustCounts(client, this.s, storeId, fileId, -1);
    const removed = (await client.query(`DELETE FROM ${this.s}.fs_chunks WHERE store_id = $1 AND file_id = $2`, [storeId, fileId])).rowCount ?? 0;
    if (removed > 0) await client.query(`UPDATE ${this.s}.fs_vector_stores SET index_version = index_version + 1 WHERE id = $1`, [storeId]);
  }

  /** One page ordered by insertion (`seq`), after/before an id (the cursor). */
  private async page<R>(table: string, columns: string[], values: unknown[], options: ListOptions, idColumn = 'id'): Promise<Page<R>> {
    const t = `${this.s}.${table}`;
    const args = [...values];
    const where = columns.map((c, i) => `${c} = $${i + 1}`).join(' AND ');
    const desc = options.order === 'desc';
    let sql = `SELECT * FROM ${t} WHERE ${where}`;
    if (options.after) {
      args.push(options.after);
      sql += ` AND seq ${desc ? '<' : '>'} COALESCE((SELECT seq FROM ${t} WHERE ${where} AND ${idColumn} = $${args.length}), ${desc ? -1 : '9223372036854775807'})`;
    }
    if (options.before) {
      args.push(options.before);
      sql += ` AND seq ${desc ? '>' : '<'} COALESCE((SELECT seq FROM ${t} WHERE ${where} AND ${idColumn} = $${args.length}), ${desc ? '9223372036854775807' : -1})`;
    }
    args.push(options.limit + 1);
    sql += ` ORDER BY seq ${desc ? 'DESC' : 'ASC'} LIMIT $${args.length}`;
    const rows = await this.rows<R>(sql, args);
    return { data: rows.slice(0, options.limit), hasMore: rows.length > options.limit };
  }
}
