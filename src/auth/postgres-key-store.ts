import type pg from 'pg';
import { migrateUnderLock, quoteIdent } from '../store/postgres.js';
import { decodeKeyRow, type KeyRow, type KeyStore, type StoredKey } from './key-store.js';

/** API keys in the gateway's PostgreSQL schema (on the pool it is given). */
export class PostgresKeyStore implements KeyStore {
  private constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
  ) {}

  static async open(pool: pg.Pool, schema: string): Promise<PostgresKeyStore> {
    const s = quoteIdent(schema);
    await migrateUnderLock(pool, schema, `
      CREATE SCHEMA IF NOT EXISTS ${s};
      CREATE TABLE IF NOT EXISTS ${s}.api_keys (
        name TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        rpm INTEGER,
        max_concurrent INTEGER,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
    `);
    return new PostgresKeyStore(pool, `${s}.api_keys`);
  }

  async create(key: Omit<StoredKey, 'createdAt' | 'revokedAt'>): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO ${this.table} (name, tenant, key_hash, rpm, max_concurrent, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
      [key.name, key.tenant, key.keyHash, key.rpm ?? null, key.maxConcurrent ?? null, Date.now()],
    );
    return (result.rowCount ?? 0) === 1;
  }

  async list(): Promise<StoredKey[]> {
    const { rows } = await this.pool.query<KeyRow>(`SELECT * FROM ${this.table} ORDER BY created_at, name`);
    return rows.map(decodeKeyRow);
  }

  async revoke(name: string): Promise<boolean> {
    const result = await this.pool.query(`UPDATE ${this.table} SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL`, [name, Date.now()]);
    return (result.rowCount ?? 0) === 1;
  }

  async close(): Promise<void> {
    // the pool belongs to the response store
  }
}
