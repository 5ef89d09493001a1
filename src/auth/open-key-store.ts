import { PostgresResponseStore } from '../store/postgres.js';
import { SqliteResponseStore } from '../store/sqlite.js';
import type { ResponseStore } from '../store/store.js';
import type { KeyStore } from './key-store.js';
import { PostgresKeyStore } from './postgres-key-store.js';
import { SqliteKeyStore } from './sqlite-key-store.js';

/** The key table beside the responses, on the same connection or pool. */
export async function openKeyStore(responses: ResponseStore): Promise<KeyStore> {
  if (responses instanceof SqliteResponseStore) return new SqliteKeyStore(responses.database);
  if (responses instanceof PostgresResponseStore) return PostgresKeyStore.open(responses.pool, responses.schema);
  throw new Error('API keys need the SQLite or PostgreSQL store');
}
