import type pg from 'pg';
import type { ChunkHit } from './store.js';

// BM25 keyword ranking for the PostgreSQL file_search store: postings (lexeme, chunk, tf, chunk
// length, file) built from each chunk's `english` tsvector, and each store's chunk/token counts.

/**
 * BM25 over the store's postings, with the same formula and constants as SQLite FTS5's bm25()
 * (k1 = 1.2, b = 0.75, idf = ln((N − df + 0.5) / (df + 0.5)) floored at 1e-6), so both backends
 * rank alike: rare terms weigh more, long chunks are normalised. Terms are bare words, stemmed
 * and stopword-filtered by PostgreSQL's `english` configuration, never tsquery syntax.
 */
export async function bm25Search(pool: pg.Pool, s: string, storeId: string, terms: string[], fileIds: string[] | null, limit: number): Promise<ChunkHit[]> {
  if (terms.length === 0) return [];
  const rows = await (await pool.query(
    `WITH st AS (SELECT GREATEST(chunk_count, 1)::float8 AS n, GREATEST(token_count::float8 / GREATEST(chunk_count, 1), 1e-9) AS avgdl FROM ${s}.fs_vector_stores WHERE id = $1),
          hits AS MATERIALIZED (
            SELECT lexeme, chunk_id, tf, doc_len, file_id FROM ${s}.fs_postings
            WHERE store_id = $1 AND lexeme = ANY ((SELECT array_agg(DISTINCT u.lexeme) FROM unnest(to_tsvector('english', $2)) u)::text[])),
          -- document frequencies over the whole store (a filter narrows the results, not the statistics, as in FTS5)
          idf AS (SELECT h.lexeme, GREATEST(ln((st.n - COUNT(*) + 0.5) / (COUNT(*) + 0.5)), 1e-6) AS idf FROM hits h CROSS JOIN st GROUP BY h.lexeme, st.n)
     SELECT h.chunk_id AS id, SUM(idf.idf * (h.tf * 2.2) / (h.tf + 1.2 * (0.25 + 0.75 * h.doc_len / st.avgdl)))::float8 AS score
     FROM hits h JOIN idf ON idf.lexeme = h.lexeme CROSS JOIN st
     WHERE $3::text[] IS NULL OR h.file_id = ANY($3::text[])
     GROUP BY h.chunk_id ORDER BY score DESC, h.chunk_id LIMIT $4`,
    [storeId, terms.join(' '), fileIds, limit],
  )).rows as Array<{ id: number; score: number }>;
  return rows.map((r) => ({ chunkId: r.id, score: r.score }));
}

/** Postings, chunk lengths and the store's counts for one file's chunks just inserted. */
export async function indexTerms(client: pg.PoolClient, s: string, storeId: string, fileId: string): Promise<void> {
  await client.query(
    `UPDATE ${s}.fs_chunks c SET doc_len = (SELECT COALESCE(SUM(COALESCE(array_length(u.positions, 1), 1)), 0) FROM unnest(c.tsv) u) WHERE c.store_id = $1 AND c.file_id = $2`,
    [storeId, fileId],
  );
  await client.query(
    `INSERT INTO ${s}.fs_postings (store_id, lexeme, chunk_id, tf, doc_len, file_id)
     SELECT c.store_id, u.lexeme, c.id, COALESCE(array_length(u.positions, 1), 1), c.doc_len, c.file_id FROM ${s}.fs_chunks c, unnest(c.tsv) u WHERE c.store_id = $1 AND c.file_id = $2`,
    [storeId, fileId],
  );
  await adjustCounts(client, s, storeId, fileId, 1);
}

/** Adds (+1) or removes (−1) one file's chunks from the store's BM25 counts. */
export async function adjustCounts(client: pg.PoolClient, s: string, storeId: string, fileId: string, sign: 1 | -1): Promise<void> {
  await client.query(
    `UPDATE ${s}.fs_vector_stores v SET chunk_count = v.chunk_count + $3 * t.n, token_count = v.token_count + $3 * t.tokens
     FROM (SELECT COUNT(*) AS n, COALESCE(SUM(doc_len), 0) AS tokens FROM ${s}.fs_chunks WHERE store_id = $1 AND file_id = $2) t WHERE v.id = $1`,
    [storeId, fileId, sign],
  );
}
