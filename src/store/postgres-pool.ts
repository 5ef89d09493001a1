import pg from 'pg';
import { quoteIdent, quoteLiteral } from './postgres-sql.js';

// The PostgreSQL pool and the gateway's schema: connecting, transactions, migrations.

/** How a PostgreSQL store connects; every field is optional. */
export interface PostgresStoreOptions {
  /** The schema holding the tables (created when missing); `public` by default. */
  schema?: string;
  /** The pool's maximum number of connections; 10 by default. */
  max?: number;
  /** Memory for settled chains kept decoded (`chain-cache.ts`); 64 MB by default, 0 keeps none. */
  chainCacheBytes?: number;
  /** How long a query waits for a connection (ms) before failing; 10 000 by default. */
  connectionTimeoutMillis?: number;
  /**
   * Errors of idle pooled connections (a server restart, a network cut). The pool drops such a
   * connection and the next query opens a new one; without a listener Node would crash.
   */
  onError?: (error: Error) => void;
}

/** A pool for the stores: closed connections are replaced, idle errors do not crash the process. */
export function createPool(url: string, options: PostgresStoreOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 10_000,
    application_name: 'switchyard',
  });
  pool.on('error', (error) => options.onError?.(error));
  return pool;
}

/** First key of the advisory lock serializing a schema's migrations (any constant; "swyd"). */
export const MIGRATION_LOCK = 0x73777964;

/**
 * Applies a store's DDL in one transaction under the schema's migration lock: replicas starting
 * together, and the stores of one gateway (responses, files, containers, keys), migrate one at a
 * time. With a lock per store, two replicas migrating different stores of one schema at once
 * could deadlock on the catalog (seen in CI: "deadlock detected" at start-up).
 */
export async function migrateUnderLock(pool: pg.Pool, schema: string, ddl: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [MIGRATION_LOCK, schema]);
        await client.query(ddl);
      });
      return;
    } catch (error) {
      // DDL of another schema at the same moment (another gateway's migration, a schema being
      // dropped) can still meet this one on the shared catalog; PostgreSQL then aborts one of the
      // two transactions, which is meant to be run again: the DDL is idempotent and was rolled back
      if ((error as { code?: unknown }).code !== DEADLOCK_DETECTED || attempt === MIGRATION_ATTEMPTS) throw error;
    }
  }
}

/** SQLSTATE `deadlock_detected`. */
const DEADLOCK_DETECTED = '40P01';
/** Migration transactions tried before a deadlock is reported as the start-up failure. */
const MIGRATION_ATTEMPTS = 5;

/** Runs `fn` in a transaction on one pooled connection; a failed connection is discarded. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * Creates the schema and every table of the gateway (responses, background runs, events,
 * approvals, conversations) when missing, in one transaction under an advisory lock, so replicas
 * starting together neither race on `CREATE … IF NOT EXISTS` nor see a half-made schema.
 *
 * Documents are `json`, not `jsonb`: it keeps the document byte for byte (key order, as the
 * SQLite store does) and accepts `\u0000` in strings, which `jsonb` rejects — model output may
 * contain it, and a save must not fail on it.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const s = quoteIdent(schema);
  await migrateUnderLock(pool, schema, `
      CREATE SCHEMA IF NOT EXISTS ${s};
      CREATE TABLE IF NOT EXISTS ${s}.responses (
        id TEXT PRIMARY KEY,
        previous_response_id TEXT,
        status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        response JSON NOT NULL,
        input_items JSON NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ${s}.background_runs (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        heartbeat_at BIGINT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE
      );
      CREATE INDEX IF NOT EXISTS background_runs_by_heartbeat ON ${s}.background_runs (heartbeat_at);
      CREATE TABLE IF NOT EXISTS ${s}.response_events (
        response_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (response_id, sequence)
      );
      CREATE TABLE IF NOT EXISTS ${s}.gateway_call_records (
        item_id TEXT PRIMARY KEY,
        response_id TEXT NOT NULL,
        record JSON NOT NULL
      );
      CREATE INDEX IF NOT EXISTS gateway_call_records_by_response ON ${s}.gateway_call_records (response_id);
      CREATE TABLE IF NOT EXISTS ${s}.approvals (
        id TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        used_at BIGINT
      );
      CREATE TABLE IF NOT EXISTS ${s}.conversations (
        id TEXT PRIMARY KEY,
        created_at BIGINT NOT NULL,
        metadata JSON NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ${s}.conversation_items (
        conversation_id TEXT NOT NULL REFERENCES ${s}.conversations (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        item_id TEXT NOT NULL,
        item JSON NOT NULL,
        PRIMARY KEY (conversation_id, position)
      );
      CREATE INDEX IF NOT EXISTS conversation_items_by_item_id ON ${s}.conversation_items (conversation_id, item_id);
      CREATE TABLE IF NOT EXISTS ${s}.conversation_locks (
        conversation_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until_ms BIGINT NOT NULL
      );
      -- v2: every stored run (foreground too) is a row of background_runs; background runs queue first
      ALTER TABLE ${s}.background_runs ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'running';
      ALTER TABLE ${s}.background_runs ADD COLUMN IF NOT EXISTS queued_at BIGINT;
      ALTER TABLE ${s}.background_runs ADD COLUMN IF NOT EXISTS request TEXT;
      CREATE INDEX IF NOT EXISTS background_runs_queue ON ${s}.background_runs (state, queued_at, id);
      -- v3: retention prunes by age; items stored before are as old as their conversation
      DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = ${quoteLiteral(schema)} AND table_name = 'conversation_items' AND column_name = 'created_at') THEN
          ALTER TABLE ${s}.conversation_items ADD COLUMN created_at BIGINT;
          UPDATE ${s}.conversation_items i SET created_at = c.created_at FROM ${s}.conversations c WHERE c.id = i.conversation_id;
          ALTER TABLE ${s}.conversation_items ALTER COLUMN created_at SET DEFAULT (extract(epoch FROM now())::bigint);
        END IF;
      END $$;
      -- v4: every stored object belongs to a tenant (an API key's); rows from before are the default tenant's
      ALTER TABLE ${s}.responses ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE ${s}.conversations ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE ${s}.approvals ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'default';
      ALTER TABLE ${s}.gateway_call_records ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'default';
      CREATE INDEX IF NOT EXISTS responses_by_created_at ON ${s}.responses (created_at);
      CREATE INDEX IF NOT EXISTS conversation_items_by_created_at ON ${s}.conversation_items (created_at);
      CREATE INDEX IF NOT EXISTS approvals_by_created_at ON ${s}.approvals (created_at);
      -- v5: a counter every deletion of responses bumps, so cached chains know when to re-read (chain-cache.ts)
      CREATE TABLE IF NOT EXISTS ${s}.store_epochs (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
      INSERT INTO ${s}.store_epochs (name, value) VALUES ('deletions', 0) ON CONFLICT DO NOTHING;
  `);
}

/** A new pool with the tables in place (the pool is ended again if migrating fails). */
export async function openMigratedPool(url: string, options: PostgresStoreOptions): Promise<{ pool: pg.Pool; schema: string }> {
  const pool = createPool(url, options);
  const schema = options.schema ?? 'public';
  try {
    await migrate(pool, schema);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return { pool, schema };
}
