/**
 * The file_search tables in schema `s` (already quoted), with the BM25 postings and the back-fill of
 * chunks written before them. Idempotent: run under the migration lock at every open.
 */
export function fileSearchSchemaSql(s: string): string {
  return `
    CREATE SCHEMA IF NOT EXISTS ${s};
    CREATE TABLE IF NOT EXISTS ${s}.fs_files (
      seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL, filename TEXT NOT NULL, purpose TEXT NOT NULL,
      bytes BIGINT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT
    );
    CREATE TABLE IF NOT EXISTS ${s}.fs_vector_stores (
      seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL, name TEXT, created_at BIGINT NOT NULL,
      last_active_at BIGINT NOT NULL, metadata TEXT NOT NULL, expires_after TEXT, keyword_only_reason TEXT,
      index_version BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS ${s}.fs_store_files (
      seq BIGSERIAL PRIMARY KEY, store_id TEXT NOT NULL, file_id TEXT NOT NULL, owner TEXT NOT NULL, batch_id TEXT,
      status TEXT NOT NULL, created_at BIGINT NOT NULL, attributes TEXT NOT NULL, chunking TEXT NOT NULL,
      usage_bytes BIGINT NOT NULL DEFAULT 0, last_error TEXT, claimed_by TEXT, claimed_until BIGINT,
      UNIQUE (store_id, file_id)
    );
    CREATE INDEX IF NOT EXISTS fs_store_files_by_file ON ${s}.fs_store_files (file_id);
    CREATE INDEX IF NOT EXISTS fs_store_files_queue ON ${s}.fs_store_files (status, claimed_until);
    CREATE TABLE IF NOT EXISTS ${s}.fs_batches (
      seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, store_id TEXT NOT NULL, owner TEXT NOT NULL,
      created_at BIGINT NOT NULL, cancelled BOOLEAN NOT NULL DEFAULT FALSE
    );
    CREATE TABLE IF NOT EXISTS ${s}.fs_chunks (
      id SERIAL PRIMARY KEY, store_id TEXT NOT NULL, file_id TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL,
      embedding BYTEA, tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
    );
    CREATE INDEX IF NOT EXISTS fs_chunks_by_file ON ${s}.fs_chunks (store_id, file_id, position);
    CREATE INDEX IF NOT EXISTS fs_chunks_tsv ON ${s}.fs_chunks USING GIN (tsv);
    CREATE INDEX IF NOT EXISTS fs_files_expiry ON ${s}.fs_files (expires_at) WHERE expires_at IS NOT NULL;
    -- BM25 (src/files/postgres-store.ts keywordSearch): term frequencies per chunk, chunk lengths,
    -- and each store's chunk and token counts (document frequency is counted from the postings)
    ALTER TABLE ${s}.fs_chunks ADD COLUMN IF NOT EXISTS doc_len INTEGER;
    ALTER TABLE ${s}.fs_vector_stores ADD COLUMN IF NOT EXISTS chunk_count BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS token_count BIGINT NOT NULL DEFAULT 0;
    -- one row per (chunk, lexeme), carrying what BM25 needs (tf, the chunk's length, its file)
    -- so a query reads only the postings of its terms, never the chunks themselves
    CREATE TABLE IF NOT EXISTS ${s}.fs_postings (
      store_id TEXT NOT NULL, lexeme TEXT NOT NULL, chunk_id INTEGER NOT NULL REFERENCES ${s}.fs_chunks (id) ON DELETE CASCADE,
      tf INTEGER NOT NULL, doc_len INTEGER NOT NULL, file_id TEXT NOT NULL,
      PRIMARY KEY (store_id, lexeme, chunk_id)
    );
    CREATE INDEX IF NOT EXISTS fs_postings_by_chunk ON ${s}.fs_postings (chunk_id);
    -- chunks written before the postings existed (doc_len still NULL) are indexed now
    UPDATE ${s}.fs_chunks c SET doc_len = (SELECT COALESCE(SUM(COALESCE(array_length(u.positions, 1), 1)), 0) FROM unnest(c.tsv) u) WHERE c.doc_len IS NULL;
    INSERT INTO ${s}.fs_postings (store_id, lexeme, chunk_id, tf, doc_len, file_id)
      SELECT c.store_id, u.lexeme, c.id, COALESCE(array_length(u.positions, 1), 1), c.doc_len, c.file_id
      FROM ${s}.fs_chunks c, unnest(c.tsv) u WHERE NOT EXISTS (SELECT 1 FROM ${s}.fs_postings p WHERE p.chunk_id = c.id)
      ON CONFLICT DO NOTHING;
    UPDATE ${s}.fs_vector_stores v SET chunk_count = t.n, token_count = t.tokens
      FROM (SELECT store_id, COUNT(*) AS n, COALESCE(SUM(doc_len), 0) AS tokens FROM ${s}.fs_chunks GROUP BY store_id) t
      WHERE v.id = t.store_id AND (v.chunk_count <> t.n OR v.token_count <> t.tokens);
  `;
}
