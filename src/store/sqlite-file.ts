import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/**
 * The gateway's SQLite file in the data folder (or an in-memory database), in WAL mode so the
 * stores' connections and readers do not block each other.
 */
export function openDatabase(dataDir: string | ':memory:'): Database.Database {
  let file = ':memory:';
  if (dataDir !== ':memory:') {
    mkdirSync(dataDir, { recursive: true });
    file = join(dataDir, 'switchyard.db');
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}
