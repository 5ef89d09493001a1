import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { ResponseObject } from '../../src/protocol/responses.js';
import type { ConversationStore } from '../../src/store/conversations.js';
import { PostgresConversationStore } from '../../src/store/postgres-conversations.js';
import { PostgresResponseStore } from '../../src/store/postgres.js';
import { SqliteConversationStore } from '../../src/store/sqlite-conversations.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { ResponseStore } from '../../src/store/store.js';
import { PG_URL } from './postgres.js';

/** Both stores on one backend, plus raw SQL for setting up what the API cannot (old rows). */
export interface OpenedStores {
  responses: ResponseStore;
  conversations: ConversationStore;
  /** Runs SQL on the backend's connection (`$1`-style parameters are rewritten for SQLite). */
  sql(text: string, params?: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/** A fresh SQLite folder, as the gateway opens it (one connection for both stores). */
export async function openSqliteStores(): Promise<OpenedStores> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-stores-'));
  const responses = new SqliteResponseStore(dir);
  const conversations = new SqliteConversationStore(responses.database);
  return {
    responses,
    conversations,
    async sql(text, params = []) {
      responses.database.prepare(text.replace(/\$\d+/g, '?')).run(...params);
    },
    async close() {
      await conversations.close();
      await responses.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh PostgreSQL schema, dropped on close. */
export async function openPostgresStores(): Promise<OpenedStores> {
  const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
  const responses = await PostgresResponseStore.open(PG_URL, { schema, max: 4 });
  const conversations = await PostgresConversationStore.fromPool(responses.pool, schema);
  await responses.pool.query(`SET search_path TO "${schema}"`);
  return {
    responses,
    conversations,
    async sql(text, params = []) {
      const client = await responses.pool.connect();
      try {
        await client.query(`SET search_path TO "${schema}"`);
        await client.query(text, params);
      } finally {
        client.release();
      }
    },
    async close() {
      await conversations.close();
      await responses.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

/** A minimal stored response. */
export function minimalResponse(id: string, fields: Partial<ResponseObject> = {}): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model: 'test-model',
    previous_response_id: null,
    output: [],
    background: false,
    store: true,
    ...fields,
  } as unknown as ResponseObject;
}
