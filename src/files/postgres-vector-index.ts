import type pg from 'pg';
import type { VectorHit } from './store.js';

/**
 * pgvector for file_search on PostgreSQL, used when `CREATE EXTENSION vector` succeeds: a
 * `vector` copy of each chunk's float32 embedding (`fs_chunks.embedding_v`, with its width in
 * `dims`) and one HNSW index (cosine) per width, as a partial expression index — HNSW needs a
 * fixed width, and a store embedded with another model gets its own index instead of an error.
 *
 * The `bytea` embedding stays the source of truth: rows written while the extension was absent
 * are copied over at open (`backfill`), so the index can be dropped and rebuilt at any time.
 *
 * Queries are filtered by store (and by the files an attribute filter allows); pgvector ≥ 0.8's
 * iterative index scan keeps reading the graph until enough rows pass those filters
 * (`hnsw.iterative_scan`), where older versions could return fewer than `limit`.
 */
export class PgvectorIndex {
  private readonly widths = new Set<number>();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly s: string,
    readonly version: string,
    private readonly iterativeScan: boolean,
  ) {}

  /** Creates the extension and columns; throws when pgvector is not installed on the server. */
  static async enable(pool: pg.Pool, s: string): Promise<PgvectorIndex> {
    await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    await pool.query(`ALTER TABLE ${s}.fs_chunks ADD COLUMN IF NOT EXISTS embedding_v vector, ADD COLUMN IF NOT EXISTS dims INTEGER`);
    const [row] = (await pool.query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).rows as Array<{ extversion: string }>;
    const [major, minor] = row.extversion.split('.').map(Number);
    const index = new PgvectorIndex(pool, s, row.extversion, major > 0 || minor >= 8);
    for (const r of (await pool.query(`SELECT DISTINCT dims FROM ${s}.fs_chunks WHERE dims IS NOT NULL`)).rows as Array<{ dims: number }>) await index.ensureIndex(r.dims);
    return index;
  }

  /** Copies stored float32 vectors that have no `vector` twin yet (written without the extension); returns how many. */
  async backfill(batch = 500): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = (await this.pool.query(`SELECT id, embedding FROM ${this.s}.fs_chunks WHERE embedding IS NOT NULL AND embedding_v IS NULL ORDER BY id LIMIT $1`, [batch])).rows as Array<{ id: number; embedding: Buffer }>;
      if (rows.length === 0) return total;
      for (const row of rows) {
        const vector = new Float32Array(Uint8Array.from(row.embedding).buffer);
        await this.pool.query(`UPDATE ${this.s}.fs_chunks SET embedding_v = $2::vector, dims = $3 WHERE id = $1`, [row.id, vectorLiteral(vector), vector.length]);
        await this.ensureIndex(vector.length);
      }
      total += rows.length;
    }
  }

  /** Fills the `vector` columns of the rows just inserted for one file (inside the caller's transaction). */
  async afterInsert(client: pg.PoolClient, storeId: string, fileId: string, embeddings: Array<Float32Array | undefined>): Promise<void> {
    for (let position = 0; position < embeddings.length; position++) {
      const e = embeddings[position];
      if (!e) continue;
      await client.query(`UPDATE ${this.s}.fs_chunks SET embedding_v = $4::vector, dims = $5 WHERE store_id = $1 AND file_id = $2 AND position = $3`, [storeId, fileId, position, vectorLiteral(e), e.length]);
    }
    const width = embeddings.find((e) => e)?.length;
    if (width && !this.widths.has(width)) await this.ensureIndex(width);
  }

  async search(storeId: string, query: Float32Array, fileIds: string[] | null, limit: number): Promise<VectorHit[]> {
    const width = query.length;
    if (!Number.isInteger(width) || width < 1 || width > 16_000) return [];
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      if (this.iterativeScan) await client.query("SET LOCAL hnsw.iterative_scan = 'relaxed_order'");
      const rows = (
        await client.query(
          `SELECT id, file_id, 1 - (embedding_v::vector(${width}) <=> $1::vector(${width})) AS similarity FROM ${this.s}.fs_chunks
           WHERE dims = ${width} AND store_id = $2 AND ($3::text[] IS NULL OR file_id = ANY($3::text[]))
           ORDER BY embedding_v::vector(${width}) <=> $1::vector(${width}) LIMIT $4`,
          [vectorLiteral(query), storeId, fileIds, limit],
        )
      ).rows as Array<{ id: number; file_id: string; similarity: number }>;
      await client.query('COMMIT');
      return rows.filter((r) => r.similarity > 0).map((r) => ({ chunkId: r.id, fileId: r.file_id, similarity: Number(r.similarity) }));
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async ensureIndex(width: number): Promise<void> {
    if (this.widths.has(width)) return;
    // outside the publishing transaction's lock footprint would be nicer; IF NOT EXISTS keeps replicas safe
    await this.pool.query(`CREATE INDEX IF NOT EXISTS fs_chunks_hnsw_d${width} ON ${this.s}.fs_chunks USING hnsw ((embedding_v::vector(${width})) vector_cosine_ops) WHERE dims = ${width}`);
    this.widths.add(width);
  }
}

/** pgvector's text form: `[0.1,0.2,…]`. */
function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector).join(',')}]`;
}
