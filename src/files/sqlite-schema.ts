import type Database from 'better-sqlite3';

/**
 * The embedded file_search tables (files, vector stores, their files, batches, chunks with their
 * float32 vectors, generation counters). Idempotent: run at every open. The per-store FTS5 tables
 * and the sqlite-vec tables are created on demand by the store and the vector index.
 */
export function createFileSearchTables(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS fs_files (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      owner TEXT NOT NULL,
      filename TEXT NOT NULL,
      purpose TEXT NOT NULL,
      bytes INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER
    );
    CREATE TABLE IF NOT EXISTS fs_vector_stores (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      owner TEXT NOT NULL,
      name TEXT,
      created_at INTEGER NOT NULL,
      last_active_at INTEGER NOT NULL,
      metadata TEXT NOT NULL,
      expires_after TEXT,
      keyword_only_reason TEXT,
      index_version INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS fs_store_files (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      store_id TEXT NOT NULL,
      file_id TEXT NOT NULL,
      owner TEXT NOT NULL,
      batch_id TEXT,
      status TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      attributes TEXT NOT NULL,
      chunking TEXT NOT NULL,
      usage_bytes INTEGER NOT NULL DEFAULT 0,
      last_error TEXT,
      claimed_by TEXT,
      claimed_until INTEGER,
      UNIQUE (store_id, file_id)
    );
    CREATE INDEX IF NOT EXISTS fs_store_files_by_file ON fs_store_files (file_id);
    CREATE INDEX IF NOT EXISTS fs_store_files_queue ON fs_store_files (status, claimed_until);
    CREATE TABLE IF NOT EXISTS fs_batches (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      store_id TEXT NOT NULL,
      owner TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      cancelled INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS fs_chunks (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      store_id TEXT NOT NULL,
      file_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      text TEXT NOT NULL,
      embedding BLOB
    );
    CREATE INDEX IF NOT EXISTS fs_chunks_by_file ON fs_chunks (store_id, file_id, position);
    CREATE INDEX IF NOT EXISTS fs_files_expiry ON fs_files (expires_at) WHERE expires_at IS NOT NULL;
    -- 'chunks' moves on every change of fs_chunks, 'vec' when the vector index took that change
    -- too: unequal at open = the index missed changes and is rebuilt ('chunks' starts ahead)
    CREATE TABLE IF NOT EXISTS fs_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT OR IGNORE INTO fs_meta (key, value) VALUES ('chunks', 1), ('vec', 0);
  `);
}
