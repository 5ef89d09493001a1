// The Conversations API: the SQLite store on its own, then the routes in process (no socket:
// test/helpers/in-process.ts), raw and through the official `openai` SDK (whose types and
// pagination must accept the shapes).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { conversationRoutes } from '../../src/http/conversations-routes.js';
import type { Dispatch } from '../../src/http/dispatch.js';
import { sendError } from '../../src/http/json.js';
import { matchRoute } from '../../src/http/router.js';
import type { Item } from '../../src/protocol/responses.js';
import { SqliteConversationStore } from '../../src/store/sqlite-conversations.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import { inProcessFetch } from '../helpers/in-process.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-conv-'));
  dirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const user = (text: string, id?: string): Item => ({ type: 'message', role: 'user', content: text, ...(id ? { id } : {}) }) as unknown as Item;
const ids = (items: readonly Item[]): string[] => items.map((item) => item.id);

describe.each([
  ['a data folder', () => tempDir()],
  [':memory:', () => ':memory:' as const],
])('SqliteConversationStore on %s', (_name, location) => {
  let store: SqliteConversationStore;

  beforeEach(() => {
    store = new SqliteConversationStore(location());
  });

  afterEach(async () => {
    await store.close();
  });

  it('creates a conversation with items, minting ids and normalizing messages', async () => {
    const before = Math.floor(Date.now() / 1000);
    const conv = await store.create({ topic: 'demo' }, [
      user('hello'),
      { type: 'message', role: 'assistant', content: 'hi there' } as unknown as Item,
      { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' } as unknown as Item,
      { type: 'function_call_output', call_id: 'call_1', output: 'ok' } as unknown as Item,
      { type: 'mcp_list_tools', server_label: 's', tools: [] } as unknown as Item,
      user('kept', 'msg_client_supplied'),
    ]);
    expect(conv.id).toMatch(/^conv_[0-9a-f]{48}$/);
    expect(conv.object).toBe('conversation');
    expect(conv.metadata).toEqual({ topic: 'demo' });
    expect(conv.created_at).toBeGreaterThanOrEqual(before);
    expect(conv.created_at).toBeLessThan(before + 5);

    const items = (await store.items(conv.id))!;
    expect(items).toHaveLength(6);
    expect(items[0]).toEqual({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }], status: 'completed' });
    expect(items[1]).toEqual({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi there', annotations: [] }], status: 'completed' });
    expect(items[2].id).toMatch(/^fc_/);
    expect(items[3].id).toMatch(/^fco_/);
    expect(items[4].id).toMatch(/^item_/);
    expect(items[5].id).toBe('msg_client_supplied');
    expect(new Set(ids(items)).size).toBe(6);
    expect(await store.get(conv.id)).toEqual(conv);
  });

  it('an unknown conversation is undefined / false everywhere', async () => {
    expect(await store.get('conv_nope')).toBeUndefined();
    expect(await store.items('conv_nope')).toBeUndefined();
    expect(await store.update('conv_nope', { a: 'b' })).toBeUndefined();
    expect(await store.delete('conv_nope')).toBe(false);
    expect(await store.appendItems('conv_nope', [user('x')])).toBe(false);
    expect(await store.listItems('conv_nope', { limit: 10, order: 'asc' })).toBeUndefined();
    expect(await store.getItem('conv_nope', 'msg_1')).toBeUndefined();
    expect(await store.deleteItem('conv_nope', 'msg_1')).toBe(false);
  });

  it('appends in order and keeps the ids it is given', async () => {
    const conv = await store.create({}, [user('a', 'msg_a')]);
    expect(await store.items(conv.id)).toHaveLength(1);
    expect(await store.appendItems(conv.id, [user('b', 'msg_b'), user('c', 'msg_c')])).toBe(true);
    expect(await store.appendItems(conv.id, [])).toBe(true);
    expect(await store.appendItems(conv.id, [user('d')])).toBe(true);
    const items = (await store.items(conv.id))!;
    expect(ids(items).slice(0, 3)).toEqual(['msg_a', 'msg_b', 'msg_c']);
    expect(items[3].id).toMatch(/^msg_/);
    expect((items[3] as any).content).toEqual([{ type: 'input_text', text: 'd' }]);
    // an empty conversation lists nothing (and is not "unknown")
    const empty = await store.create({}, []);
    expect(await store.items(empty.id)).toEqual([]);
    expect(await store.listItems(empty.id, { limit: 5, order: 'desc' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
  });

  it('lists items with after/limit in both orders', async () => {
    const conv = await store.create({}, ['1', '2', '3', '4', '5'].map((n) => user(n, `msg_${n}`)));
    const asc1 = (await store.listItems(conv.id, { limit: 2, order: 'asc' }))!;
    expect(ids(asc1.data)).toEqual(['msg_1', 'msg_2']);
    expect(asc1).toMatchObject({ firstId: 'msg_1', lastId: 'msg_2', hasMore: true });
    const asc2 = (await store.listItems(conv.id, { limit: 2, order: 'asc', after: 'msg_2' }))!;
    expect(ids(asc2.data)).toEqual(['msg_3', 'msg_4']);
    expect(asc2.hasMore).toBe(true);
    const asc3 = (await store.listItems(conv.id, { limit: 2, order: 'asc', after: 'msg_4' }))!;
    expect(ids(asc3.data)).toEqual(['msg_5']);
    expect(asc3).toMatchObject({ firstId: 'msg_5', lastId: 'msg_5', hasMore: false });
    // exactly a full last page: no more
    expect((await store.listItems(conv.id, { limit: 5, order: 'asc' }))!.hasMore).toBe(false);

    const desc1 = (await store.listItems(conv.id, { limit: 3, order: 'desc' }))!;
    expect(ids(desc1.data)).toEqual(['msg_5', 'msg_4', 'msg_3']);
    expect(desc1).toMatchObject({ firstId: 'msg_5', lastId: 'msg_3', hasMore: true });
    const desc2 = (await store.listItems(conv.id, { limit: 3, order: 'desc', after: 'msg_3' }))!;
    expect(ids(desc2.data)).toEqual(['msg_2', 'msg_1']);
    expect(desc2.hasMore).toBe(false);
    // after the last item, and after an unknown id: an empty page
    expect(await store.listItems(conv.id, { limit: 3, order: 'desc', after: 'msg_1' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
    expect(await store.listItems(conv.id, { limit: 3, order: 'asc', after: 'msg_unknown' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
  });

  it('gets and deletes single items', async () => {
    const conv = await store.create({}, [user('a', 'msg_a'), user('b', 'msg_b'), user('c', 'msg_c')]);
    expect(await store.getItem(conv.id, 'msg_b')).toEqual({ id: 'msg_b', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'b' }], status: 'completed' });
    expect(await store.getItem(conv.id, 'msg_zzz')).toBeUndefined();
    expect(await store.deleteItem(conv.id, 'msg_b')).toBe(true);
    expect(await store.deleteItem(conv.id, 'msg_b')).toBe(false);
    expect(await store.getItem(conv.id, 'msg_b')).toBeUndefined();
    expect(ids((await store.items(conv.id))!)).toEqual(['msg_a', 'msg_c']);
    // positions keep growing after a deletion: new items still come last
    await store.appendItems(conv.id, [user('d', 'msg_d')]);
    expect(ids((await store.items(conv.id))!)).toEqual(['msg_a', 'msg_c', 'msg_d']);
    // an item id belongs to its conversation
    const other = await store.create({}, []);
    expect(await store.getItem(other.id, 'msg_a')).toBeUndefined();
    expect(await store.deleteItem(other.id, 'msg_a')).toBe(false);
  });

  it('replaces the metadata on update', async () => {
    const conv = await store.create({ a: '1', b: '2' }, []);
    const updated = await store.update(conv.id, { c: '3' });
    expect(updated).toEqual({ ...conv, metadata: { c: '3' } });
    expect(await store.get(conv.id)).toEqual(updated);
    expect((await store.update(conv.id, {}))!.metadata).toEqual({});
  });

  it('deletes a conversation together with its items', async () => {
    const conv = await store.create({}, [user('a', 'msg_a'), user('b', 'msg_b')]);
    const kept = await store.create({}, [user('x', 'msg_x')]);
    expect(await store.delete(conv.id)).toBe(true);
    expect(await store.get(conv.id)).toBeUndefined();
    expect(await store.items(conv.id)).toBeUndefined();
    expect(await store.getItem(conv.id, 'msg_a')).toBeUndefined();
    expect(await store.delete(conv.id)).toBe(false);
    expect(ids((await store.items(kept.id))!)).toEqual(['msg_x']);
  });
});

describe('SqliteConversationStore persistence', () => {
  it('survives reopening the file and shares it with the response store', async () => {
    const dir = tempDir();
    const responses = new SqliteResponseStore(dir);
    const first = new SqliteConversationStore(dir);
    const conv = await first.create({ k: 'v' }, [user('one', 'msg_1')]);
    await first.appendItems(conv.id, [user('two', 'msg_2')]);
    // both connections write the same WAL database
    await responses.recordApproval('mcpr_1', 'digest');
    await first.close();

    const second = new SqliteConversationStore(dir);
    expect(await second.get(conv.id)).toEqual(conv);
    expect(ids((await second.items(conv.id))!)).toEqual(['msg_1', 'msg_2']);
    await second.appendItems(conv.id, [user('three', 'msg_3')]);
    expect(ids((await second.listItems(conv.id, { limit: 10, order: 'desc' }))!.data)).toEqual(['msg_3', 'msg_2', 'msg_1']);
    expect(await responses.consumeApproval('mcpr_1', 'digest')).toBe('ok');
    await second.close();
    await responses.close();
  });
});

// ---------- the routes ----------

let inProcess: typeof fetch;
let routeStore: SqliteConversationStore;

beforeAll(async () => {
  routeStore = new SqliteConversationStore(tempDir());
  const routes = conversationRoutes(routeStore, 64 * 1024);
  const dispatch: Dispatch = (req, res) => {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    const run = async () => {
      const match = matchRoute(routes, req.method ?? 'GET', path);
      if (match === 'method_not_allowed') throw new GatewayError(405, 'invalid_request_error', 'method_not_allowed', 'Method not allowed.');
      if (!match) throw new GatewayError(404, 'invalid_request_error', 'unknown_url', `Unknown request URL: ${path}.`);
      await match.route.handle(req, res, match.params, new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)));
    };
    run().catch((err: unknown) => {
      if (err instanceof GatewayError) sendError(res, err);
      else {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err), type: 'server_error', param: null, code: null } }));
      }
    });
  };
  inProcess = inProcessFetch(dispatch);
});

afterAll(async () => {
  await routeStore.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await inProcess(path, {
    method,
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  return { status: res.status, json: await res.json() };
}

function expectError(result: { status: number; json: any }, status: number, param: string | null, code?: string): void {
  expect(result.status).toBe(status);
  expect(Object.keys(result.json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(result.json.error.param).toBe(param);
  expect(result.json.error.type).toBe('invalid_request_error');
  if (code !== undefined) expect(result.json.error.code).toBe(code);
}

describe('conversation routes over HTTP', () => {
  it('creates, retrieves, updates and deletes a conversation', async () => {
    const created = await call('POST', '/v1/conversations', { items: [{ role: 'user', content: 'hi' }], metadata: { topic: 'x' } });
    expect(created.status).toBe(200);
    expect(created.json).toEqual({ id: expect.stringMatching(/^conv_/), object: 'conversation', created_at: expect.any(Number), metadata: { topic: 'x' } });
    const id = created.json.id as string;

    const bare = await call('POST', '/v1/conversations', {});
    expect(bare.json.metadata).toEqual({});
    expect((await call('POST', '/v1/conversations', { items: null, metadata: null })).json.metadata).toEqual({});

    expect(await call('GET', `/v1/conversations/${id}`)).toEqual({ status: 200, json: created.json });
    const updated = await call('POST', `/v1/conversations/${id}`, { metadata: { topic: 'y', extra: 'z' } });
    expect(updated).toEqual({ status: 200, json: { ...created.json, metadata: { topic: 'y', extra: 'z' } } });
    expect((await call('POST', `/v1/conversations/${id}`, { metadata: null })).json.metadata).toEqual({});

    expect(await call('DELETE', `/v1/conversations/${id}`)).toEqual({ status: 200, json: { id, object: 'conversation.deleted', deleted: true } });
    expectError(await call('GET', `/v1/conversations/${id}`), 404, null, 'conversation_not_found');
    expectError(await call('DELETE', `/v1/conversations/${id}`), 404, null, 'conversation_not_found');
    expectError(await call('POST', `/v1/conversations/${id}`, { metadata: {} }), 404, null, 'conversation_not_found');
  });

  it('adds, lists, retrieves and deletes items', async () => {
    const { json: conv } = await call('POST', '/v1/conversations', { items: [{ type: 'message', role: 'user', content: 'first', id: 'msg_first' }] });
    const added = await call('POST', `/v1/conversations/${conv.id}/items?include=message.output_text.logprobs`, {
      items: [
        { type: 'message', role: 'assistant', content: 'second' },
        { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'found' },
      ],
    });
    expect(added.status).toBe(200);
    expect(added.json.object).toBe('list');
    expect(added.json.has_more).toBe(false);
    expect(added.json.data).toHaveLength(3);
    expect(added.json.data[0]).toEqual({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'second', annotations: [] }], status: 'completed' });
    expect(added.json.data[1]).toEqual({ id: expect.stringMatching(/^fc_/), type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{}' });
    expect(added.json.first_id).toBe(added.json.data[0].id);
    expect(added.json.last_id).toBe(added.json.data[2].id);
    const addedIds = added.json.data.map((i: any) => i.id);

    // default: desc, limit 20
    const all = await call('GET', `/v1/conversations/${conv.id}/items`);
    expect(all.status).toBe(200);
    expect(all.json.data.map((i: any) => i.id)).toEqual([...addedIds].reverse().concat('msg_first'));
    expect(all.json).toMatchObject({ object: 'list', first_id: addedIds[2], last_id: 'msg_first', has_more: false });
    expect(all.json.data[3]).toEqual({ id: 'msg_first', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'first' }], status: 'completed' });

    const page1 = await call('GET', `/v1/conversations/${conv.id}/items?order=asc&limit=2`);
    expect(page1.json.data.map((i: any) => i.id)).toEqual(['msg_first', addedIds[0]]);
    expect(page1.json.has_more).toBe(true);
    const page2 = await call('GET', `/v1/conversations/${conv.id}/items?order=asc&limit=2&after=${page1.json.last_id}`);
    expect(page2.json.data.map((i: any) => i.id)).toEqual(addedIds.slice(1));
    expect(page2.json.has_more).toBe(false);

    expect(await call('GET', `/v1/conversations/${conv.id}/items/msg_first`)).toEqual({ status: 200, json: all.json.data[3] });
    expect(await call('DELETE', `/v1/conversations/${conv.id}/items/msg_first`)).toEqual({ status: 200, json: conv });
    expectError(await call('GET', `/v1/conversations/${conv.id}/items/msg_first`), 404, null, 'item_not_found');
    expectError(await call('DELETE', `/v1/conversations/${conv.id}/items/msg_first`), 404, null, 'item_not_found');
    expect((await call('GET', `/v1/conversations/${conv.id}/items`)).json.data).toHaveLength(3);
  });

  it('rejects bad create bodies with the offending param', async () => {
    expectError(await call('POST', '/v1/conversations', '[1]'), 400, null, 'invalid_type');
    expectError(await call('POST', '/v1/conversations', '{not json'), 400, null, 'invalid_json');
    expectError(await call('POST', '/v1/conversations', { items: 'hello' }), 400, 'items', 'invalid_type');
    const tooMany = Array.from({ length: 21 }, (_, i) => ({ role: 'user', content: `m${i}` }));
    expectError(await call('POST', '/v1/conversations', { items: tooMany }), 400, 'items', 'array_above_max_length');
    expect((await call('POST', '/v1/conversations', { items: tooMany.slice(0, 20) })).status).toBe(200);
    expectError(await call('POST', '/v1/conversations', { items: [{ role: 'user', content: 'ok' }, 'nope'] }), 400, 'items[1]', 'invalid_type');
    expectError(await call('POST', '/v1/conversations', { items: [{ role: 'robot', content: 'x' }] }), 400, 'items[0].role');
    expectError(await call('POST', '/v1/conversations', { items: [{ type: 'teleport' }] }), 400, 'items[0].type');
    expectError(await call('POST', '/v1/conversations', { items: [{ role: 'user', content: [{ type: 'input_text' }] }] }), 400, 'items[0].content[0].text');
    expectError(await call('POST', '/v1/conversations', { items: [{ type: 'function_call', name: 'f', arguments: '{}' }] }), 400, 'items[0].call_id', 'missing_required_parameter');
    expectError(await call('POST', '/v1/conversations', { items: [{ type: 'item_reference', id: 'msg_1' }] }), 400, 'items[0].type');
    expectError(await call('POST', '/v1/conversations', { items: [{ role: 'user', content: 'x', id: 42 }] }), 400, 'items[0].id', 'invalid_type');
    expectError(await call('POST', '/v1/conversations', { metadata: 'x' }), 400, 'metadata', 'invalid_type');
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    expectError(await call('POST', '/v1/conversations', { metadata: seventeen }), 400, 'metadata');
    expectError(await call('POST', '/v1/conversations', { metadata: { ['k'.repeat(65)]: 'v' } }), 400, `metadata.${'k'.repeat(65)}`);
    expectError(await call('POST', '/v1/conversations', { metadata: { long: 'v'.repeat(513) } }), 400, 'metadata.long');
    expectError(await call('POST', '/v1/conversations', { metadata: { n: 1 } }), 400, 'metadata.n');
    expect((await call('POST', '/v1/conversations', { metadata: { ['k'.repeat(64)]: 'v'.repeat(512) } })).status).toBe(200);
    // body limit
    const huge = await call('POST', '/v1/conversations', { metadata: { a: 'x'.repeat(70 * 1024) } });
    expect(huge.status).toBe(413);
  });

  it('rejects bad update, item and listing requests with the offending param', async () => {
    const { json: conv } = await call('POST', '/v1/conversations', {});
    expectError(await call('POST', `/v1/conversations/${conv.id}`, {}), 400, 'metadata', 'missing_required_parameter');
    expectError(await call('POST', `/v1/conversations/${conv.id}`, { metadata: [] }), 400, 'metadata', 'invalid_type');

    expectError(await call('POST', `/v1/conversations/${conv.id}/items`, {}), 400, 'items', 'missing_required_parameter');
    expectError(await call('POST', `/v1/conversations/${conv.id}/items`, { items: [] }), 400, 'items', 'empty_array');
    expectError(await call('POST', `/v1/conversations/${conv.id}/items`, { items: {} }), 400, 'items', 'invalid_type');
    const tooMany = Array.from({ length: 21 }, () => ({ role: 'user', content: 'x' }));
    expectError(await call('POST', `/v1/conversations/${conv.id}/items`, { items: tooMany }), 400, 'items', 'array_above_max_length');
    expectError(await call('POST', `/v1/conversations/${conv.id}/items`, { items: [{ role: 'user', content: 'a' }, { type: 'function_call_output', call_id: 'c' }] }), 400, 'items[1].output', 'invalid_type');
    // a rejected batch adds nothing
    expect((await call('GET', `/v1/conversations/${conv.id}/items`)).json.data).toEqual([]);
    expectError(await call('POST', '/v1/conversations/conv_missing/items', { items: [{ role: 'user', content: 'x' }] }), 404, null, 'conversation_not_found');

    for (const limit of ['0', '101', '1.5', 'abc']) expectError(await call('GET', `/v1/conversations/${conv.id}/items?limit=${limit}`), 400, 'limit');
    expect((await call('GET', `/v1/conversations/${conv.id}/items?limit=100`)).status).toBe(200);
    expectError(await call('GET', `/v1/conversations/${conv.id}/items?order=up`), 400, 'order');
    expectError(await call('GET', '/v1/conversations/conv_missing/items'), 404, null, 'conversation_not_found');
    expectError(await call('GET', '/v1/conversations/conv_missing/items/msg_1'), 404, null, 'conversation_not_found');
    expectError(await call('DELETE', '/v1/conversations/conv_missing/items/msg_1'), 404, null, 'conversation_not_found');
    expectError(await call('GET', `/v1/conversations/${conv.id}/items/msg_missing`), 404, null, 'item_not_found');
    expect((await call('GET', '/v1/conversations')).status).toBe(405);
  });
});

describe('conversation routes through the openai SDK', () => {
  let client: OpenAI;
  beforeAll(() => {
    client = new OpenAI({ baseURL: 'http://in-process/v1', apiKey: 'test', maxRetries: 0, fetch: inProcess });
  });

  it('parses every conversation shape', async () => {
    const conv = await client.conversations.create({
      metadata: { owner: 'sdk' },
      items: [{ type: 'message', role: 'user', content: 'Hello from the SDK' }],
    });
    expect(conv.id).toMatch(/^conv_/);
    expect(conv.object).toBe('conversation');
    expect(conv.metadata).toEqual({ owner: 'sdk' });

    const empty = await client.conversations.create();
    expect(empty.metadata).toEqual({});

    expect(await client.conversations.retrieve(conv.id)).toEqual(conv);
    const updated = await client.conversations.update(conv.id, { metadata: { owner: 'sdk', step: '2' } });
    expect(updated.metadata).toEqual({ owner: 'sdk', step: '2' });

    const added = await client.conversations.items.create(conv.id, {
      items: [
        { type: 'message', role: 'assistant', content: 'Hi!' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'How are you?' }] },
        { type: 'function_call', call_id: 'call_9', name: 'mood', arguments: '{}' },
      ],
    });
    expect(added.object).toBe('list');
    expect(added.data).toHaveLength(3);
    expect(added.has_more).toBe(false);
    const assistant = added.data[0];
    expect(assistant.type).toBe('message');
    if (assistant.type === 'message') {
      expect(assistant.status).toBe('completed');
      expect(assistant.content).toEqual([{ type: 'output_text', text: 'Hi!', annotations: [] }]);
    }

    // SDK auto-pagination with limit 2 (default order desc): 4 items over 2 pages
    const seen: string[] = [];
    for await (const item of client.conversations.items.list(conv.id, { limit: 2 })) seen.push(item.id!);
    expect(seen).toHaveLength(4);
    expect(seen.slice(0, 3)).toEqual(added.data.map((i) => i.id).reverse());
    const ascending: string[] = [];
    for await (const item of client.conversations.items.list(conv.id, { limit: 3, order: 'asc' })) ascending.push(item.id!);
    expect(ascending).toEqual([...seen].reverse());

    const page = await client.conversations.items.list(conv.id, { limit: 2, order: 'asc' });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    expect(page.hasNextPage()).toBe(true);

    const first = await client.conversations.items.retrieve(ascending[0], { conversation_id: conv.id });
    expect(first).toMatchObject({ id: ascending[0], type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'Hello from the SDK' }] });

    const afterDelete = await client.conversations.items.delete(ascending[0], { conversation_id: conv.id });
    expect(afterDelete).toEqual(updated);
    await expect(client.conversations.items.retrieve(ascending[0], { conversation_id: conv.id })).rejects.toBeInstanceOf(NotFoundError);

    const deleted = await client.conversations.delete(conv.id);
    expect(deleted).toEqual({ id: conv.id, object: 'conversation.deleted', deleted: true });
    await expect(client.conversations.retrieve(conv.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('surfaces validation errors as BadRequestError with the param', async () => {
    const conv = await client.conversations.create();
    const err = await client.conversations.items
      .create(conv.id, { items: [{ type: 'message', role: 'user', content: 'ok' }, { type: 'message', role: 'nobody', content: 'x' } as any] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).param).toBe('items[1].role');
    const missing = await client.conversations.items.list('conv_missing').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).code).toBe('conversation_not_found');
  });
});
