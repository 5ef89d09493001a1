import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import type { VectorHit, VectorIndexMode } from './store.js';

/** Why the index could not be used, for the log (`fileSearch.vectorIndex: auto` falls back to the exact scan). */
export class VectorIndexUnavailableError extends Error {}

/**
 * The sqlite-vec index of file_search vectors: one `vec0` virtual table per embedding width
 * (`fs_vec_d<width>`), partitioned by vector store (a query reads only its store's chunks), with
 * the chunk's file as a metadata column so attribute filters (resolved to file ids) are applied
 * inside the KNN query, before ranking. Rowids are `fs_chunks.id`.
 *
 * Distances are L2 (SIMD in the prebuilt library, where cosine is not): the stored vectors are unit
 * length, so the order is the cosine order and the similarity follows from the distance.
 *
 * The float32 vectors in `fs_chunks.embedding` stay the source of truth: this index is written
 * in the same transactions as the chunks, and two counters in `fs_meta` (chunk generation,
 * index generation) tell at open whether it missed changes (the database was used in exact mode,
 * or by a build without the extension); if so it is rebuilt from the stored vectors.
 *
 * sqlite-vec 0.1.9's `vec0` answers a KNN query by scanning the partition in C (SIMD distance,
 * chunked storage): exact results, no graph. It moves the scan into the database and out of the
 * gateway's heap (no per-store cache of every vector).
 */
export class SqliteVectorIndex {
  private readonly tables = new Set<number>();
  private readonly searchStatements = new Map<string, Database.Statement>();
  private readonly insertStatements = new Map<number, Database.Statement>();

  private constructor(private readonly db: Database.Database) {
    for (const row of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'fs_vec_d%'").all() as Array<{ name: string }>) {
      const width = /^fs_vec_d(\d+)$/.exec(row.name);
      if (width) this.tables.add(Number(width[1]));
    }
  }

  /**
   * Loads the extension into `db` and returns the index, or throws VectorIndexUnavailableError
   * (no prebuilt library for this platform, or it does not load).
   */
  static load(db: Database.Database, extensionPath?: string): SqliteVectorIndex {
    try {
      const path = extensionPath ?? (createRequire(import.meta.url)('sqlite-vec') as { getLoadablePath(): string }).getLoadablePath();
      db.loadExtension(path);
      db.prepare('SELECT vec_version()').get();
    } catch (err) {
      throw new VectorIndexUnavailableError(`sqlite-vec cannot be loaded: ${(err as Error).message}`);
    }
    return new SqliteVectorIndex(db);
  }

  get version(): string {
    return (this.db.prepare('SELECT vec_version() AS v').get() as { v: string }).v;
  }

  /** Adds one chunk's vector (inside the caller's transaction). */
  insert(storeId: string, fileId: string, chunkId: number | bigint, embedding: Buffer): void {
    const width = embedding.byteLength / 4;
    this.ensureTable(width);
    let statement = this.insertStatements.get(width);
    if (!statement) {
      statement = this.db.prepare(`INSERT INTO fs_vec_d${width} (rowid, store_id, embedding, file_id) VALUES (?, ?, ?, ?)`);
      this.insertStatements.set(width, statement);
    }
    statement.run(BigInt(chunkId), storeId, embedding, fileId);
  }

  /** Removes the vectors of the chunks `chunkIdsSql` selects (run before those chunks are deleted). */
  deleteWhere(chunkIdsSql: string, ...values: unknown[]): void {
    for (const width of this.tables) this.db.prepare(`DELETE FROM fs_vec_d${width} WHERE rowid IN (${chunkIdsSql})`).run(...values);
  }

  /** The `limit` nearest chunks of the store by cosine similarity (> 0), among `fileIds` when given. */
  search(storeId: string, query: Float32Array, fileIds: string[] | null, limit: number): VectorHit[] {
    if (!this.tables.has(query.length) || limit < 1) return [];
    const key = `${query.length}:${fileIds === null ? 'all' : 'in'}`;
    let statement = this.searchStatements.get(key);
    if (!statement) {
      const table = `fs_vec_d${query.length}`;
      statement = this.db.prepare(
        `SELECT rowid AS id, file_id, distance FROM ${table} WHERE embedding MATCH ? AND k = ? AND store_id = ?` + (fileIds === null ? '' : ' AND file_id IN (SELECT value FROM json_each(?))'),
      );
      this.searchStatements.set(key, statement);
    }
    const bytes = Buffer.from(query.buffer, query.byteOffset, query.byteLength);
    const args: unknown[] = [bytes, limit, storeId];
    if (fileIds !== null) args.push(JSON.stringify(fileIds));
    const rows = statement.all(...args) as Array<{ id: number; file_id: string; distance: number }>;
    const hits: VectorHit[] = [];
    // unit vectors: L2 distance² = 2 − 2·cos, so similarity = 1 − d²/2; as in the exact scan, only positive ones count
    for (const row of rows) {
      const similarity = 1 - (row.distance * row.distance) / 2;
      if (similarity > 0) hits.push({ chunkId: row.id, fileId: row.file_id, similarity });
    }
    return hits;
  }

  /** Drops every vec0 table and fills them again from `fs_chunks.embedding`; returns the vectors indexed. */
  rebuild(): number {
    for (const width of this.tables) this.db.exec(`DROP TABLE IF EXISTS fs_vec_d${width}`);
    this.tables.clear();
    this.searchStatements.clear();
    this.insertStatements.clear();
    let count = 0;
    // in pages (a statement being iterated keeps the connection busy: no CREATE meanwhile)
    const page = this.db.prepare('SELECT id, store_id, file_id, embedding FROM fs_chunks WHERE embedding IS NOT NULL AND id > ? ORDER BY id LIMIT 1000');
    for (let after = 0; ; ) {
      const rows = page.all(after) as Array<{ id: number; store_id: string; file_id: string; embedding: Buffer }>;
      if (rows.length === 0) return count;
      for (const row of rows) this.insert(row.store_id, row.file_id, row.id, row.embedding);
      count += rows.length;
      after = rows[rows.length - 1].id;
    }
  }

  private ensureTable(width: number): void {
    if (this.tables.has(width)) return;
    if (!Number.isInteger(width) || width < 1 || width > 8192) throw new Error(`cannot index a vector of ${width} dimensions`);
    this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS fs_vec_d${width} USING vec0(store_id TEXT PARTITION KEY, embedding float[${width}] distance_metric=l2, file_id TEXT)`);
    this.tables.add(width);
  }
}

/** `auto` takes the index when it loads; `exact` never uses one; a named index is required. */
export function wantsIndex(mode: VectorIndexMode, kind: 'sqlite-vec' | 'pgvector'): 'no' | 'try' | 'require' {
  if (mode === 'exact') return 'no';
  if (mode === 'auto') return 'try';
  return mode === kind ? 'require' : 'no';
}
