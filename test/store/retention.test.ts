// Retention (config `store.retention`): settled responses with their event logs, and conversation
// items, older than the retention are pruned in bounded batches — on SQLite and PostgreSQL — and
// `DELETE /v1/responses/{id}` removes a response's event log with it.
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetentionSweeper } from '../../src/store/retention.js';
import { parseDuration } from '../../src/util/duration.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';
import { minimalResponse, openPostgresStores, openSqliteStores, type OpenedStores } from '../helpers/store-backends.js';

const pgUnavailable = await probePostgres(PG_URL);
const silent = pino({ level: 'silent' });
const DAY = 86_400;

describe.each([
  ['sqlite', openSqliteStores, undefined],
  ['postgres', openPostgresStores, pgUnavailable],
] as const)('retention on %s', (_name, open, unavailable) => {
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

  it('prunes settled responses, their event logs and old conversation items in bounded batches; keeps the rest', async () => {
    const now = Math.floor(Date.now() / 1000);
    const old = now - 40 * DAY;
    for (let i = 0; i < 7; i++) {
      await stores.responses.save({ response: minimalResponse(`resp_old${i}`, { created_at: old + i, background: true }), inputItems: [] });
      await stores.responses.appendEvents(`resp_old${i}`, [{ sequence: 0, json: '{"type":"response.created"}' }]);
    }
    await stores.responses.save({ response: minimalResponse('resp_oldrunning', { created_at: old, status: 'in_progress' }), inputItems: [] });
    await stores.responses.save({ response: minimalResponse('resp_fresh', { created_at: now }), inputItems: [] });
    await stores.responses.recordApproval('mcpr_old', 'digest');
    await stores.sql('UPDATE approvals SET created_at = $1 WHERE id = $2', [old * 1000, 'mcpr_old']);
    await stores.responses.recordApproval('mcpr_fresh', 'digest');

    const conversation = await stores.conversations.create({}, [{ id: 'msg_a', type: 'message', role: 'user', content: 'old' } as never]);
    await stores.conversations.appendItems(conversation.id, [{ id: 'msg_b', type: 'message', role: 'user', content: 'new' } as never]);
    await stores.sql('UPDATE conversation_items SET created_at = $1 WHERE item_id = $2', [old, 'msg_a']);

    const batches: number[] = [];
    const responses = stores.responses;
    const counting = Object.assign(Object.create(responses), {
      pruneResponses: async (before: number, limit: number) => {
        const n = await responses.pruneResponses(before, limit);
        batches.push(n);
        return n;
      },
    });
    const sweeper = new RetentionSweeper(counting, stores.conversations, { maxAgeMs: parseDuration('30d')!, intervalMs: 60_000, batchSize: 3 }, silent);
    const result = await sweeper.sweep();
    expect(result).toEqual({ responses: 7, items: 1 });
    // bounded: never more than the batch size per transaction
    expect(batches).toEqual([3, 3, 1]);

    for (let i = 0; i < 7; i++) {
      expect(await stores.responses.get(`resp_old${i}`)).toBeUndefined();
      expect(await stores.responses.eventsAfter(`resp_old${i}`, -1)).toEqual([]);
    }
    expect(await stores.responses.get('resp_oldrunning')).toBeDefined();
    expect(await stores.responses.get('resp_fresh')).toBeDefined();
    expect(await stores.responses.checkApproval('mcpr_old', 'digest')).toBe('unknown');
    expect(await stores.responses.checkApproval('mcpr_fresh', 'digest')).toBe('ok');
    expect((await stores.conversations.items(conversation.id))!.map((item) => item.id)).toEqual(['msg_b']);
    // a second pass finds nothing
    expect(await sweeper.sweep()).toEqual({ responses: 0, items: 0 });
  });

  it('deleting a response deletes its event log', async () => {
    await stores.responses.save({ response: minimalResponse('resp_del', { background: true }), inputItems: [] });
    await stores.responses.appendEvents('resp_del', [
      { sequence: 0, json: '{"type":"response.created"}' },
      { sequence: 1, json: '{"type":"response.completed"}' },
    ]);
    expect(await stores.responses.delete('resp_del')).toBe(true);
    expect(await stores.responses.eventsAfter('resp_del', -1)).toEqual([]);
    expect(await stores.responses.get('resp_del')).toBeUndefined();
  });
});

describe('retention in the gateway', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { store: { retention: '1s', retentionSweepMs: 200 } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('a response past `store.retention` is gone from the API', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'unused', maxRetries: 0 });
    const response = await client.responses.create({ model: 'sim', input: 'hello' });
    expect((await client.responses.retrieve(response.id)).id).toBe(response.id);
    // created_at has second resolution: past 1 s after at most ~2 s, then a sweep
    const deadline = Date.now() + 6_000;
    let gone = false;
    while (!gone && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      gone = await client.responses.retrieve(response.id).then(
        () => false,
        (err: unknown) => (err as { status?: number }).status === 404,
      );
    }
    expect(gone).toBe(true);
  });

  it('rejects a retention that is not a duration', async () => {
    const { loadConfig } = await import('../../src/config/config.js');
    expect(() => loadConfig({ env: {}, overrides: { store: { retention: '30 days' } } })).toThrow(/store\.retention: expected a duration/);
  });
});
