import type Database from 'better-sqlite3';
import { openDatabase } from '../store/sqlite-file.js';
import { toContainer, toFile, type ContainerRow, type FileRow } from './rows.js';
import type { ContainerFileRecord, ContainerRecord, ContainerStore, Page, PageOptions } from './store.js';

/** Container metadata in the gateway's SQLite file (its own connection; WAL lets the stores coexist). */
export class SqliteContainerStore implements ContainerStore {
  private readonly db: Database.Database;

  constructor(dataDir: string | ':memory:') {
    this.db = openDatabase(dataDir);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS containers (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_active_at INTEGER NOT NULL,
        expires_after_minutes INTEGER NOT NULL,
        memory_limit TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS containers_by_owner ON containers (owner, seq);
      CREATE TABLE IF NOT EXISTS container_files (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        container_id TEXT NOT NULL,
        path TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        source TEXT NOT NULL,
        UNIQUE (container_id, path)
      );
      CREATE INDEX IF NOT EXISTS container_files_by_container ON container_files (container_id, seq);
    `);
  }

  async create(record: ContainerRecord): Promise<void> {
    this.db
      .prepare('INSERT INTO containers (id, owner, name, created_at, last_active_at, expires_after_minutes, memory_limit) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(record.id, record.owner, record.name, record.createdAt, record.lastActiveAt, record.expiresAfterMinutes, record.memoryLimit);
  }

  async get(id: string, owner: string): Promise<ContainerRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM containers WHERE id = ? AND owner = ?').get(id, owner) as ContainerRow | undefined;
    return row && toContainer(row);
  }

  async list(owner: string, options: PageOptions): Promise<Page<ContainerRecord>> {
    const rows = this.page<ContainerRow>('containers', 'owner', owner, options);
    return { data: rows.slice(0, options.limit).map(toContainer), hasMore: rows.length > options.limit };
  }

  async touch(id: string, lastActiveAt: number): Promise<void> {
    this.db.prepare('UPDATE containers SET last_active_at = MAX(last_active_at, ?) WHERE id = ?').run(lastActiveAt, id);
  }

  async delete(id: string): Promise<boolean> {
    return this.db.transaction(() => {
      this.db.prepare('DELETE FROM container_files WHERE container_id = ?').run(id);
      return this.db.prepare('DELETE FROM containers WHERE id = ?').run(id).changes > 0;
    })();
  }

  async expired(now: number, limit: number): Promise<ContainerRecord[]> {
    const rows = this.db.prepare('SELECT * FROM containers WHERE last_active_at + expires_after_minutes * 60 <= ? ORDER BY seq LIMIT ?').all(now, limit) as ContainerRow[];
    return rows.map(toContainer);
  }

  async putFile(file: ContainerFileRecord): Promise<ContainerFileRecord> {
    this.db
      .prepare(
        `INSERT INTO container_files (id, container_id, path, bytes, created_at, source) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (container_id, path) DO UPDATE SET bytes = excluded.bytes`,
      )
      .run(file.id, file.containerId, file.path, file.bytes, file.createdAt, file.source);
    const row = this.db.prepare('SELECT * FROM container_files WHERE container_id = ? AND path = ?').get(file.containerId, file.path) as FileRow;
    return toFile(row);
  }

  async getFile(containerId: string, fileId: string): Promise<ContainerFileRecord | undefined> {
    const row = this.db.prepare('SELECT * FROM container_files WHERE container_id = ? AND id = ?').get(containerId, fileId) as FileRow | undefined;
    return row && toFile(row);
  }

  async listFiles(containerId: string, options: PageOptions): Promise<Page<ContainerFileRecord>> {
    const rows = this.page<FileRow>('container_files', 'container_id', containerId, options);
    return { data: rows.slice(0, options.limit).map(toFile), hasMore: rows.length > options.limit };
  }

  async allFiles(containerId: string): Promise<ContainerFileRecord[]> {
    return (this.db.prepare('SELECT * FROM container_files WHERE container_id = ? ORDER BY seq').all(containerId) as FileRow[]).map(toFile);
  }

  async deleteFile(containerId: string, fileId: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM container_files WHERE container_id = ? AND id = ?').run(containerId, fileId).changes > 0;
  }

  async close(): Promise<void> {
    this.db.close();
  }

  /** Up to `limit + 1` rows of one scope after the cursor (an unknown cursor starts from the beginning). */
  private page<R>(table: 'containers' | 'container_files', scopeColumn: string, scope: string, options: PageOptions): R[] {
    const direction = options.order === 'asc' ? 'ASC' : 'DESC';
    const compare = options.order === 'asc' ? '>' : '<';
    const cursor = options.after
      ? (this.db.prepare(`SELECT seq FROM ${table} WHERE id = ? AND ${scopeColumn} = ?`).get(options.after, scope) as { seq: number } | undefined)
      : undefined;
    if (cursor) {
      return this.db.prepare(`SELECT * FROM ${table} WHERE ${scopeColumn} = ? AND seq ${compare} ? ORDER BY seq ${direction} LIMIT ?`).all(scope, cursor.seq, options.limit + 1) as R[];
    }
    return this.db.prepare(`SELECT * FROM ${table} WHERE ${scopeColumn} = ? ORDER BY seq ${direction} LIMIT ?`).all(scope, options.limit + 1) as R[];
  }
}
