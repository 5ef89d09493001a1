import type Database from 'better-sqlite3';
import { decodeKeyRow, type KeyRow, type KeyStore, type StoredKey } from './key-store.js';

/** API keys in the gateway's SQLite file (on the connection it is given). */
export class SqliteKeyStore implements KeyStore {
  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS api_keys (
      name TEXT PRIMARY KEY,
      tenant TEXT NOT NULL,
      key_hash TEXT NOT NULL UNIQUE,
      rpm INTEGER,
      max_concurrent INTEGER,
      created_at INTEGER NOT NULL,
      revoked_at INTEGER
    )`);
  }

  async create(key: Omit<StoredKey, 'createdAt' | 'revokedAt'>): Promise<boolean> {
    const result = this.db
      .prepare('INSERT OR IGNORE INTO api_keys (name, tenant, key_hash, rpm, max_concurrent, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(key.name, key.tenant, key.keyHash, key.rpm ?? null, key.maxConcurrent ?? null, Date.now());
    return result.changes === 1;
  }

  async list(): Promise<StoredKey[]> {
    return (this.db.prepare('SELECT * FROM api_keys ORDER BY created_at, name').all() as KeyRow[]).map(decodeKeyRow);
  }

  async revoke(name: string): Promise<boolean> {
    return this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL').run(Date.now(), name).changes === 1;
  }

  async close(): Promise<void> {
    // the connection belongs to the response store
  }
}
