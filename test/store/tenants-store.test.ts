// Tenants in the stores, on SQLite and PostgreSQL (and two tenants through a gateway on PostgreSQL): a response keeps the owner it was first stored
// with, approvals and item lookups are scoped by tenant, conversations know their owner, and a
// database from before tenants is migrated (its rows become the default tenant's).
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import OpenAI, { NotFoundError } from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresResponseStore } from '../../src/store/postgres.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PG_URL, postgresAbsent, probePostgres, REQUIRE_PG } from '../helpers/postgres.js';
import { minimalResponse, openPostgresStores, openSqliteStores, type OpenedStores } from '../helpers/store-backends.js';

const pgUnavailable = await probePostgres(PG_URL);
const message = (id: string, text: string) => ({ id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }) as never;

describe.each([
  ['sqlite', openSqliteStores, undefined],
  ['postgres', openPostgresStores, pgUnavailable],
] as const)('tenants in the %s store', (_name, open, unavailable) => {
  if (unavailable) {
    postgresAbsent(unavailable);
    return;
  }
  let stores: OpenedStores;
  beforeAll(async () => {
    stores = await open();
  });
  afterAll(async () => {
    await stores?.close();
  });

  it('a response keeps its first owner through later saves; chains report it', async () => {
    await stores.responses.save({ response: minimalResponse('resp_t1', { status: 'in_progress' }), inputItems: [], owner: 'alice' });
    // a later save without an owner (e.g. a sweep settling it) does not change it
    await stores.responses.save({ response: minimalResponse('resp_t1'), inputItems: [] });
    expect((await stores.responses.get('resp_t1'))!.owner).toBe('alice');
    await stores.responses.save({ response: minimalResponse('resp_t2', { previous_response_id: 'resp_t1' }), inputItems: [], owner: 'alice' });
    expect((await stores.responses.chain('resp_t2'))!.map((r) => r.owner)).toEqual(['alice', 'alice']);
    await stores.responses.save({ response: minimalResponse('resp_t3'), inputItems: [] });
    expect((await stores.responses.get('resp_t3'))!.owner).toBe('default');
  });

  it("approvals are the issuing tenant's: another tenant's is unknown and cannot be used", async () => {
    await stores.responses.recordApproval('mcpr_t1', 'digest', 'alice');
    expect(await stores.responses.checkApproval('mcpr_t1', 'digest', 'bob')).toBe('unknown');
    expect(await stores.responses.consumeApproval('mcpr_t1', 'digest', 'bob')).toBe('unknown');
    expect(await stores.responses.checkApproval('mcpr_t1', 'digest', 'alice')).toBe('ok');
    expect(await stores.responses.consumeApproval('mcpr_t1', 'digest', 'alice')).toBe('ok');
    expect(await stores.responses.consumeApproval('mcpr_t1', 'digest', 'alice')).toBe('used');
  });

  it("findItem (item_reference) looks in the tenant's own responses only", async () => {
    await stores.responses.save({ response: minimalResponse('resp_t4', { output: [message('msg_t4', 'secret')] }), inputItems: [], owner: 'alice' });
    expect(await stores.responses.findItem('msg_t4', 'bob')).toBeUndefined();
    expect((await stores.responses.findItem('msg_t4', 'alice'))?.id).toBe('msg_t4');
  });

  it("gateway call records are the tenant's: another tenant can neither read nor overwrite them", async () => {
    const record = { itemId: 'ws_t1', callId: 'call_1', name: 'web_search', arguments: '{}', output: 'what alice saw' };
    await stores.responses.saveCallRecords('resp_t5', [record], 'alice');
    expect(await stores.responses.callRecords(['ws_t1'], 'bob')).toEqual([]);
    await stores.responses.saveCallRecords('resp_t6', [{ ...record, output: 'bob wrote this' }], 'bob');
    expect(await stores.responses.callRecords(['ws_t1'], 'alice')).toEqual([record]);
  });

  it('conversations know their owner', async () => {
    const mine = await stores.conversations.create({}, [], 'alice');
    const legacy = await stores.conversations.create({}, []);
    expect(await stores.conversations.ownerOf(mine.id)).toBe('alice');
    expect(await stores.conversations.ownerOf(legacy.id)).toBe('default');
    expect(await stores.conversations.ownerOf('conv_missing')).toBeUndefined();
  });
});

describe('migrating a database from before tenants', () => {
  const oldTables = `
    CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, status TEXT NOT NULL, created_at BIGINT NOT NULL, response TEXT NOT NULL, input_items TEXT NOT NULL);
    CREATE TABLE approvals (id TEXT PRIMARY KEY, digest TEXT NOT NULL, created_at BIGINT NOT NULL, used_at BIGINT);
    CREATE TABLE conversations (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL, metadata TEXT NOT NULL);
    CREATE TABLE conversation_items (conversation_id TEXT NOT NULL, position INTEGER NOT NULL, item_id TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (conversation_id, position));`;
  const row = JSON.stringify(minimalResponse('resp_legacy'));

  it('SQLite: old rows become the default tenant’s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-legacy-'));
    try {
      const db = new Database(join(dir, 'switchyard.db'));
      db.exec(oldTables);
      db.prepare('INSERT INTO responses VALUES (?, NULL, ?, ?, ?, ?)').run('resp_legacy', 'completed', 1, row, '[]');
      db.close();
      const store = new SqliteResponseStore(dir);
      expect((await store.get('resp_legacy'))?.owner).toBe('default');
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(pgUnavailable !== undefined && !REQUIRE_PG)('PostgreSQL: old rows become the default tenant’s', async () => {
    const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${schema}"; SET search_path TO "${schema}"; ${oldTables.replace(/TEXT NOT NULL\);\n    CREATE TABLE approvals/, 'TEXT NOT NULL);\n    CREATE TABLE approvals').replace('response TEXT NOT NULL, input_items TEXT NOT NULL', 'response JSON NOT NULL, input_items JSON NOT NULL')}`);
      await client.query(`INSERT INTO "${schema}".responses VALUES ($1, NULL, 'completed', 1, $2::json, '[]'::json)`, ['resp_legacy', row]);
      const store = await PostgresResponseStore.open(PG_URL, { schema, max: 2 });
      expect((await store.get('resp_legacy'))?.owner).toBe('default');
      await store.close();
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  });
});

describe.skipIf(pgUnavailable !== undefined && !REQUIRE_PG)('two tenants through a gateway on PostgreSQL', () => {
  const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      config: { store: { kind: 'postgres', url: PG_URL, schema }, auth: { keys: [{ name: 'alice', key: 'sk-alice-0123456789abcdef' }, { name: 'bob', key: 'sk-bob-0123456789abcdef01' }] } } as never,
    });
  });
  afterAll(async () => {
    await gw?.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it("each sees only its own responses and conversations", async () => {
    const alice = new OpenAI({ baseURL: gw.baseURL, apiKey: 'sk-alice-0123456789abcdef', maxRetries: 0 });
    const bob = new OpenAI({ baseURL: gw.baseURL, apiKey: 'sk-bob-0123456789abcdef01', maxRetries: 0 });
    const response = await alice.responses.create({ model: 'sim', input: 'hi' });
    await expect(bob.responses.retrieve(response.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.responses.create({ model: 'sim', input: 'go on', previous_response_id: response.id })).rejects.toBeInstanceOf(NotFoundError);
    expect((await alice.responses.create({ model: 'sim', input: 'go on', previous_response_id: response.id })).status).toBe('completed');
    const conversation = await alice.conversations.create({});
    await expect(bob.conversations.retrieve(conversation.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.responses.create({ model: 'sim', input: 'hi', conversation: conversation.id })).rejects.toBeInstanceOf(NotFoundError);
    expect((await alice.responses.create({ model: 'sim', input: 'hi', conversation: conversation.id })).status).toBe('completed');
  });
});
