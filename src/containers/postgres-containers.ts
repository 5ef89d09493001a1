import type pg from 'pg';
import { openMigratedPool, migrateUnderLock, quoteIdent, withTransaction, type PostgresStoreOptions } from '../store/postgres.js';
import { toContainer, toFile, type ContainerRow, type FileRow } from './rows.js';
import type { ContainerFileRecord, ContainerRecord, ContainerStore, Page, PageOptions } from './store.js';

/** Container metadata in PostgreSQL, beside the responses (same schema; tables created when missing). */
export class PostgresContainerStore implements ContainerStore {
  private readonly containers: string;
  private readonly files: string;

  private constructor(private readonly pool: pg.Pool, schema: string, private readonly ownsPool: boolean) {
    const s = quoteIdent(schema);
    this.containers = `${s}.containers`;
    this.files = `${s}.container_files`;
  }

  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresContainerStore> {
    const { pool, schema } = await openMigratedPool(url, options);
    await migrateContainers(pool, schema);
    return new PostgresContainerStore(pool, schema, true);
  }

  /** On a pool owned by the caller (the responses store's); `close` leaves it open. */
  static async fromPool(pool: pg.Pool, schema = 'public'): Promise<PostgresContainerStore> {
    await migrateContainers(pool, schema);
    return new PostgresContainerStore(pool, schema, false);
  }

  async create(record: ContainerRecord): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.containers} (id, owner, name, created_at, last_active_at, expires_after_minutes, memory_limit) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      record.id,
      record.owner,
      record.name,
      record.createdAt,
      record.lastActiveAt,
      record.expiresAfterMinutes,
      record.memoryLimit,
    ]);
  }

  async get(id: string, owner: string): Promise<ContainerRecord | undefined> {
    const { rows } = await this.pool.query<ContainerRow>(`SELECT * FROM ${this.containers} WHERE id = $1 AND owner = $2`, [id, owner]);
    return rows[0] && toContainer(rows[0]);
  }

  async list(owner: string, options: PageOptions): Promise<Page<ContainerRecord>> {
    const rows = await this.page<ContainerRow>(this.containers, 'owner', owner, options);
    return { data: rows.slice(0, options.limit).map(toContainer), hasMore: rows.length > options.limit };
  }

  async touch(id: string, lastActiveAt: number): Promise<void> {
    await this.pool.query(`UPDATE ${this.containers} SET last_active_at = GREATEST(last_active_at, $2) WHERE id = $1`, [id, lastActiveAt]);
  }

  async delete(id: string): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM ${this.files} WHERE container_id = $1`, [id]);
      const result = await client.query(`DELETE FROM ${this.containers} WHERE id = $1`, [id]);
      return (result.rowCount ?? 0) > 0;
    });
  }

  async expired(now: number, limit: number): Promise<ContainerRecord[]> {
    const { rows } = await this.pool.query<ContainerRow>(`SELECT * FROM ${this.containers} WHERE last_active_at + expires_after_minutes * 60 <= $1 ORDER BY seq LIMIT $2`, [now, limit]);
    return rows.map(toContainer);
  }

  async putFile(file: ContainerFileRecord): Promise<ContainerFileRecord> {
    const { rows } = await this.pool.query<FileRow>(
      `INSERT INTO ${this.files} (id, container_id, path, bytes, created_at, source) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (container_id, path) DO UPDATE SET bytes = EXCLUDED.bytes
       RETURNING id, container_id, path, bytes, created_at, source`,
      [file.id, file.containerId, file.path, file.bytes, file.createdAt, file.source],
    );
    return toFile(rows[0]);
  }

  async getFile(containerId: string, fileId: string): Promise<ContainerFileRecord | undefined> {
    const { rows } = await this.pool.query<FileRow>(`SELECT * FROM ${this.files} WHERE container_id = $1 AND id = $2`, [containerId, fileId]);
    return rows[0] && toFile(rows[0]);
  }

  async listFiles(containerId: string, options: PageOptions): Promise<Page<ContainerFileRecord>> {
    const rows = await this.page<FileRow>(this.files, 'container_id', containerId, options);
    return { data: rows.slice(0, options.limit).map(toFile), hasMore: rows.length > options.limit };
  }

  async allFiles(containerId: string): Promise<ContainerFileRecord[]> {
    const { rows } = await this.pool.query<FileRow>(`SELECT * FROM ${this.files} WHERE container_id = $1 ORDER BY seq`, [containerId]);
    return rows.map(toFile);
  }

  async deleteFile(containerId: string, fileId: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM ${this.files} WHERE container_id = $1 AND id = $2`, [containerId, fileId]);
    return (result.rowCount ?? 0) > 0;
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  private async page<R extends pg.QueryResultRow>(table: string, scopeColumn: 'owner' | 'container_id', scope: string, options: PageOptions): Promise<R[]> {
    const direction = options.order === 'asc' ? 'ASC' : 'DESC';
    const compare = options.order === 'asc' ? '>' : '<';
    if (options.after) {
      const { rows } = await this.pool.query<R>(
        `SELECT * FROM ${table} WHERE ${scopeColumn} = $1 AND seq ${compare} (SELECT seq FROM ${table} WHERE id = $2 AND ${scopeColumn} = $1) ORDER BY seq ${direction} LIMIT $3`,
        [scope, options.after, options.limit + 1],
      );
      // an unknown cursor starts from the beginning (as the SQLite store)
      const known = await this.pool.query(`SELECT 1 FROM ${table} WHERE id = $1 AND ${scopeColumn} = $2`, [options.after, scope]);
      if ((known.rowCount ?? 0) > 0) return rows;
    }
    const { rows } = await this.pool.query<R>(`SELECT * FROM ${table} WHERE ${scopeColumn} = $1 ORDER BY seq ${direction} LIMIT $2`, [scope, options.limit + 1]);
    return rows;
  }
}

async function migrateContainers(pool: pg.Pool, schema: string): Promise<void> {
  const s = quoteIdent(schema);
  await migrateUnderLock(pool, schema, `
      CREATE SCHEMA IF NOT EXISTS ${s};
      CREATE TABLE IF NOT EXISTS ${s}.containers (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_active_at BIGINT NOT NULL,
        expires_after_minutes INTEGER NOT NULL,
        memory_limit TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS containers_by_owner ON ${s}.containers (owner, seq);
      CREATE TABLE IF NOT EXISTS ${s}.container_files (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        container_id TEXT NOT NULL,
        path TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        source TEXT NOT NULL,
        UNIQUE (container_id, path)
      );
      CREATE INDEX IF NOT EXISTS container_files_by_container ON ${s}.container_files (container_id, seq);
  `);
}
