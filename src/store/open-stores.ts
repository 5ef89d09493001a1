import { PostgresConversationStore } from './postgres-conversations.js';
import { PostgresResponseStore } from './postgres.js';
import { SqliteConversationStore } from './sqlite-conversations.js';
import { SqliteResponseStore } from './sqlite.js';
import type { ConversationStore } from './conversations.js';
import type { ResponseStore } from './store.js';

/** Where state lives: one SQLite file (embedded default) or a PostgreSQL shared by replicas. */
export interface StoreConfig {
  kind: 'sqlite' | 'postgres';
  /** PostgreSQL connection string (`postgres://user@host:5432/db`); required for `postgres`. */
  url?: string;
  schema?: string;
  maxConnections?: number;
  /** Memory for kept chains (`chain-cache.ts`), MB; 0 keeps none. */
  chainCacheMb?: number;
}

export interface Stores {
  responses: ResponseStore;
  conversations: ConversationStore;
}

/** Opens the configured stores (tables created if missing; PostgreSQL migrations are replica-safe). */
export async function openStores(config: StoreConfig, dataDir: string, onError: (err: Error) => void): Promise<Stores> {
  if (config.kind === 'postgres') {
    if (!config.url) throw new Error("store.url is required when store.kind is 'postgres' (or set SWITCHYARD_DATABASE_URL)");
    const responses = await PostgresResponseStore.open(config.url, { schema: config.schema, max: config.maxConnections, onError, chainCacheBytes: chainCacheBytes(config) });
    const conversations = await PostgresConversationStore.fromPool(responses.pool, responses.schema);
    return { responses, conversations };
  }
  // one connection for both: a turn's settlement (response + conversation items) is one transaction
  const responses = new SqliteResponseStore(dataDir, { chainCacheBytes: chainCacheBytes(config) });
  return { responses, conversations: new SqliteConversationStore(responses.database) };
}

function chainCacheBytes(config: StoreConfig): number | undefined {
  return config.chainCacheMb === undefined ? undefined : config.chainCacheMb * 1024 * 1024;
}
