// One conformance suite for every ResponseStore / ConversationStore implementation: SQLite in a
// data folder, SQLite in memory, and PostgreSQL (a fresh schema per run, dropped afterwards).
// PostgreSQL-only tests then run two stores on one schema, as two gateway replicas would.
// The PostgreSQL blocks are skipped, saying why, when the server cannot be reached within 2 s
// (SWITCHYARD_TEST_POSTGRES_URL overrides the address; SWITCHYARD_REQUIRE_POSTGRES=1 turns the
// skip into a failure, for CI).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Item, ResponseObject } from '../../src/protocol/responses.js';
import type { ConversationStore } from '../../src/store/conversations.js';
import { PostgresConversationStore } from '../../src/store/postgres-conversations.js';
import { PostgresResponseStore } from '../../src/store/postgres.js';
import { SqliteConversationStore } from '../../src/store/sqlite-conversations.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { ResponseStore } from '../../src/store/store.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
if (pgUnavailable) console.warn(`store-conformance: ${pgUnavailable}; the PostgreSQL blocks are skipped`);

const schemas: string[] = [];
const dirs: string[] = [];

function freshSchema(): string {
  const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  return schema;
}

afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!pgUnavailable) await dropSchemas(schemas);
});

interface Stores {
  responses: ResponseStore;
  conversations: ConversationStore;
}

interface Backend {
  unavailable?: string;
  open(): Promise<Stores>;
}

function sqliteIn(location: () => string): Backend {
  return {
    async open() {
      const dir = location();
      // as the gateway opens them: one connection, so a settlement spans both (also in memory)
      const responses = new SqliteResponseStore(dir);
      return { responses, conversations: new SqliteConversationStore(responses.database) };
    },
  };
}

let pgSchema: string | undefined;
const postgres: Backend = {
  unavailable: pgUnavailable,
  async open() {
    pgSchema ??= freshSchema();
    const responses = await PostgresResponseStore.open(PG_URL, { schema: pgSchema, max: 4 });
    const conversations = await PostgresConversationStore.fromPool(responses.pool, pgSchema);
    return { responses, conversations };
  },
};

// ---------- fixtures ----------

let counter = 0;
/** Ids unique across tests (the PostgreSQL block shares one schema). */
const uid = (prefix: string): string => `${prefix}_${randomBytes(4).toString('hex')}${(counter++).toString(36)}`;

const user = (text: string, id?: string): Item => ({ type: 'message', role: 'user', content: text, ...(id ? { id } : {}) }) as unknown as Item;
const storedUser = (text: string): Item =>
  ({ id: uid('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] }) as unknown as Item;
const ids = (items: readonly Item[]): string[] => items.map((item) => item.id);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function response(id: string, previous: string | null, text = 'ok', status: ResponseObject['status'] = 'completed'): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: 1_700_000_000,
    completed_at: status === 'completed' ? 1_700_000_001 : null,
    status,
    incomplete_details: null,
    model: 'test-model',
    previous_response_id: previous,
    instructions: null,
    output: [{ id: uid('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
    error: null,
    tools: [],
    tool_choice: 'auto',
    truncation: 'disabled',
    parallel_tool_calls: true,
    text: { format: { type: 'text' } },
    top_p: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    top_logprobs: 0,
    temperature: 1,
    reasoning: null,
    usage: null,
    max_output_tokens: null,
    max_tool_calls: null,
    store: true,
    background: false,
    service_tier: 'default',
    metadata: { zeta: '1', alpha: '2' },
    safety_identifier: null,
    prompt_cache_key: null,
  } as unknown as ResponseObject;
}

// ---------- the conformance suite ----------

describe.each<[string, Backend]>([
  ['SQLite in a data folder', sqliteIn(() => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-conformance-'));
    dirs.push(dir);
    return dir;
  })],
  ['SQLite :memory:', sqliteIn(() => ':memory:')],
  ['PostgreSQL', postgres],
])('store conformance: %s', (_name, backend) => {
  if (backend.unavailable) {
    postgresAbsent(backend.unavailable);
    return;
  }

  let store: ResponseStore;
  let conversations: ConversationStore;

  beforeEach(async () => {
    ({ responses: store, conversations } = await backend.open());
  });

  afterEach(async () => {
    await conversations.close();
    await store.close();
  });

  describe('ResponseStore', () => {
    it('saves, gets and upserts a response, keeping the document exactly', async () => {
      const id = uid('resp');
      const first = response(id, null, 'in progress', 'in_progress');
      const input = [storedUser('hello'), storedUser('nul \u0000 and ünïcödé 🚀 "quotes"')];
      await store.save({ response: first, inputItems: input });
      const got = await store.get(id);
      expect(got).toEqual({ response: first, inputItems: input, owner: 'default' });
      // the document comes back as written: key order (also of metadata) and a NUL in a string
      expect(Object.keys(got!.response)).toEqual(Object.keys(first));
      expect(Object.keys(got!.response.metadata)).toEqual(['zeta', 'alpha']);

      const done = response(id, null, 'finished \u0000');
      await store.save({ response: done, inputItems: input.slice(0, 1) });
      expect(await store.get(id)).toEqual({ response: done, inputItems: input.slice(0, 1), owner: 'default' });
      expect(await store.get(uid('resp'))).toBeUndefined();
    });

    it('returns the chain ending at an id, oldest first', async () => {
      const [a, b, c] = [uid('resp'), uid('resp'), uid('resp')];
      const inputs = [[storedUser('one')], [storedUser('two')], [storedUser('three')]];
      // saved out of order: the chain follows the links, not the insertion order
      await store.save({ response: response(c, b, 'C'), inputItems: inputs[2] });
      await store.save({ response: response(a, null, 'A'), inputItems: inputs[0] });
      await store.save({ response: response(b, a, 'B'), inputItems: inputs[1] });

      const chain = await store.chain(c);
      expect(chain?.map((r) => r.response.id)).toEqual([a, b, c]);
      expect(chain?.map((r) => r.inputItems)).toEqual(inputs);
      expect((await store.chain(b))?.map((r) => r.response.id)).toEqual([a, b]);
      expect((await store.chain(a))?.map((r) => r.response.id)).toEqual([a]);
      expect(await store.chain(uid('resp'))).toBeUndefined();

      // a link to a response that is not stored ends the chain
      const orphan = uid('resp');
      await store.save({ response: response(orphan, uid('resp_missing')), inputItems: [] });
      expect((await store.chain(orphan))?.map((r) => r.response.id)).toEqual([orphan]);
    });

    it('deletes a response and its events', async () => {
      const id = uid('resp');
      await store.save({ response: response(id, null), inputItems: [storedUser('x')] });
      await store.appendEvents(id, [
        { sequence: 0, json: '{"type":"response.created"}' },
        { sequence: 1, json: '{"type":"response.completed"}' },
      ]);
      expect(await store.delete(id)).toBe(true);
      expect(await store.get(id)).toBeUndefined();
      expect(await store.chain(id)).toBeUndefined();
      expect(await store.eventsAfter(id, -1)).toEqual([]);
      expect(await store.delete(id)).toBe(false);
      expect(await store.listInputItems(id, { limit: 10, order: 'asc' })).toBeUndefined();
    });

    it('pages the input items (asc, desc, after, has_more)', async () => {
      const id = uid('resp');
      const items = Array.from({ length: 5 }, (_, i) => storedUser(`item ${i}`));
      const all = ids(items);
      await store.save({ response: response(id, null), inputItems: items });

      const first = await store.listInputItems(id, { limit: 2, order: 'asc' });
      expect(first).toEqual({ data: items.slice(0, 2), firstId: all[0], lastId: all[1], hasMore: true });
      const second = await store.listInputItems(id, { after: first!.lastId!, limit: 2, order: 'asc' });
      expect(ids(second!.data)).toEqual(all.slice(2, 4));
      expect(second!.hasMore).toBe(true);
      const last = await store.listInputItems(id, { after: all[3], limit: 2, order: 'asc' });
      expect(ids(last!.data)).toEqual([all[4]]);
      expect(last!.hasMore).toBe(false);
      const exact = await store.listInputItems(id, { limit: 5, order: 'asc' });
      expect(exact!.hasMore).toBe(false);

      const desc = await store.listInputItems(id, { limit: 2, order: 'desc' });
      expect(desc).toEqual({ data: [items[4], items[3]], firstId: all[4], lastId: all[3], hasMore: true });
      const descAfter = await store.listInputItems(id, { after: all[3], limit: 2, order: 'desc' });
      expect(ids(descAfter!.data)).toEqual([all[2], all[1]]);
      expect(descAfter!.hasMore).toBe(true);

      expect(await store.listInputItems(id, { after: 'msg_unknown', limit: 2, order: 'asc' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
      expect(await store.listInputItems(uid('resp'), { limit: 2, order: 'asc' })).toBeUndefined();
    });

    it('finds a stored item by id among input and output items', async () => {
      const id = uid('resp');
      const input = storedUser('find me');
      await store.save({ response: response(id, null, 'found output'), inputItems: [input] });
      const record = (await store.get(id))!;
      expect(await store.findItem(input.id)).toEqual(input);
      expect(await store.findItem(record.response.output[0].id)).toEqual(record.response.output[0]);
      expect(await store.findItem(uid('msg'))).toBeUndefined();
      await store.delete(id);
      expect(await store.findItem(input.id)).toBeUndefined();
    });

    it('keeps model-facing call records by item id, privately, and deletes them with their response', async () => {
      const id = uid('resp');
      await store.save({ response: response(id, null), inputItems: [storedUser('x')] });
      const a = { itemId: uid('ws'), callId: 'call_a', name: 'web_search', arguments: '{"query":"q"}', output: 'Search results … \u0000 ünïcode' };
      const b = { itemId: uid('mcp'), callId: 'call_b', name: 'mcp__s__t', arguments: '{}', output: 'Error: nope' };
      await store.saveCallRecords(id, [a, b]);
      expect(await store.callRecords([])).toEqual([]);
      expect((await store.callRecords([b.itemId, a.itemId, uid('ws')])).sort((x, y) => x.callId.localeCompare(y.callId))).toEqual([a, b]);
      // saving again replaces by item id
      await store.saveCallRecords(id, [{ ...a, output: 'replaced' }]);
      expect(await store.callRecords([a.itemId])).toEqual([{ ...a, output: 'replaced' }]);
      // never part of the public documents
      expect(JSON.stringify(await store.get(id))).not.toContain('call_a');
      expect(await store.delete(id)).toBe(true);
      expect(await store.callRecords([a.itemId, b.itemId])).toEqual([]);
    });

    it('records, checks and consumes approvals once', async () => {
      const id = uid('mcpr');
      await store.recordApproval(id, 'digest-a');
      expect(await store.checkApproval(id, 'digest-a')).toBe('ok');
      expect(await store.checkApproval(id, 'digest-b')).toBe('mismatch');
      expect(await store.checkApproval(uid('mcpr'), 'digest-a')).toBe('unknown');
      // a check changes nothing, nor does a consume with the wrong digest
      expect(await store.checkApproval(id, 'digest-a')).toBe('ok');
      expect(await store.consumeApproval(id, 'digest-b')).toBe('mismatch');
      expect(await store.consumeApproval(id, 'digest-a')).toBe('ok');
      expect(await store.consumeApproval(id, 'digest-a')).toBe('used');
      expect(await store.checkApproval(id, 'digest-a')).toBe('used');
      expect(await store.consumeApproval(id, 'digest-b')).toBe('mismatch');
      expect(await store.consumeApproval(uid('mcpr'), 'digest-a')).toBe('unknown');
      // recording again neither rebinds nor revives it
      await store.recordApproval(id, 'digest-c');
      expect(await store.checkApproval(id, 'digest-a')).toBe('used');
      expect(await store.checkApproval(id, 'digest-c')).toBe('mismatch');
    });

    it('tracks runs: heartbeats, cancel requests, lost runs, stale runs, finish', async () => {
      const [a, b] = [uid('resp'), uid('resp')];
      const owner = uid('gateway');
      await store.registerRun(a, owner);
      await store.registerRun(b, owner);
      expect(await store.heartbeat(owner, [a, b])).toEqual({ cancelled: [], lost: [] });
      expect(await store.heartbeat(owner, [])).toEqual({ cancelled: [], lost: [] });

      await store.requestCancel(a);
      await store.requestCancel(uid('resp')); // unknown: nothing happens
      expect(await store.heartbeat(owner, [a, b])).toEqual({ cancelled: [a], lost: [] });
      expect(await store.heartbeat(owner, [b, a])).toEqual({ cancelled: [a], lost: [] });
      // another owner's heartbeat neither touches the runs nor hears their cancellation: they are not its own
      expect(await store.heartbeat(uid('gateway'), [a, b])).toEqual({ cancelled: [], lost: [a, b] });

      const stale = await store.staleRuns(Date.now() + 60_000);
      expect(stale).toEqual(expect.arrayContaining([a, b]));
      const fresh = await store.staleRuns(Date.now() - 60_000);
      expect(fresh).not.toContain(a);
      expect(fresh).not.toContain(b);

      // a heartbeat moves the run past `before`; the other stays stale
      await sleep(5);
      const before = Date.now();
      await sleep(2);
      expect((await store.heartbeat(owner, [a])).cancelled).toEqual([a]);
      const now = await store.staleRuns(before);
      expect(now).toContain(b);
      expect(now).not.toContain(a);

      await store.finishRun(a);
      expect(await store.staleRuns(Date.now() + 60_000)).not.toContain(a);
      expect(await store.heartbeat(owner, [a])).toEqual({ cancelled: [], lost: [a] });

      // registering again hands the run over, cancellation request cleared
      await store.requestCancel(b);
      const next = uid('gateway');
      await store.registerRun(b, next);
      expect(await store.heartbeat(owner, [b])).toEqual({ cancelled: [], lost: [b] });
      expect(await store.heartbeat(next, [b])).toEqual({ cancelled: [], lost: [] });
      await store.finishRun(b);
      expect(await store.staleRuns(Date.now() + 60_000)).not.toContain(b);
    });

    it('starts a foreground run in one write: registered, owned, its response readable in_progress', async () => {
      const id = uid('resp');
      const owner = uid('gateway');
      const running = response(id, null, '', 'in_progress');
      const input = [storedUser('q')];
      await store.startRun({ response: running, inputItems: input, owner: 'tenant-a' }, owner);
      // the response, under its tenant
      expect(await store.get(id)).toEqual({ response: running, inputItems: input, owner: 'tenant-a' });
      // the run: the owner's, alive, stale only once its heartbeats stop
      expect(await store.heartbeat(owner, [id])).toEqual({ cancelled: [], lost: [] });
      expect(await store.heartbeat(uid('gateway'), [id])).toEqual({ cancelled: [], lost: [id] });
      expect(await store.staleRuns(Date.now() + 60_000)).toContain(id);
      expect(await store.staleRuns(Date.now() - 60_000)).not.toContain(id);
      // fenced like a registered run: only its owner writes it, and settles it
      expect(await store.saveOwned({ response: running, inputItems: [], owner: 'tenant-a' }, uid('gateway'))).toBe(false);
      const done = response(id, null, 'done', 'completed');
      expect(await store.settle({ record: { response: done, inputItems: input, owner: 'tenant-a' }, owner })).toBe('ok');
      expect((await store.get(id))?.response).toEqual(done);
      expect(await store.staleRuns(Date.now() + 60_000)).not.toContain(id);

      // starting it again (a retry after a lost answer) hands the run over, cancellation cleared
      await store.requestCancel(id);
      const next = uid('gateway');
      await store.startRun({ response: running, inputItems: [], owner: 'tenant-a' }, next);
      expect(await store.heartbeat(next, [id])).toEqual({ cancelled: [], lost: [] });
      expect(await store.heartbeat(owner, [id])).toEqual({ cancelled: [], lost: [id] });
      await store.finishRun(id);
    });

    it('fences an owner: once a stale run is failed by another, its owner can write nothing', async () => {
      const id = uid('resp');
      const owner = uid('gateway');
      await store.registerRun(id, owner);
      const running = { ...response(id, null, 'partial', 'in_progress'), background: true } as ResponseObject;
      expect(await store.saveOwned({ response: running, inputItems: [] }, owner)).toBe(true);
      expect(await store.appendEvents(id, [{ sequence: 0, json: '{"n":0}' }], owner)).toBe(true);
      // another owner cannot write it
      expect(await store.saveOwned({ response: running, inputItems: [] }, uid('gateway'))).toBe(false);
      expect(await store.appendEvents(id, [{ sequence: 1, json: '{"n":"intruder"}' }], uid('gateway'))).toBe(false);

      // not stale yet: nobody can claim it
      expect(await store.failStaleRun(id, Date.now() - 60_000, () => undefined)).toBe(false);
      const seen: Array<[string | undefined, number]> = [];
      const claimed = await store.failStaleRun(id, Date.now() + 60_000, (record, next) => {
        seen.push([record?.response.status, next]);
        const failed = { ...record!.response, status: 'failed', error: { code: 'server_error', message: 'owner died' } } as ResponseObject;
        return { record: { response: failed, inputItems: [] }, event: { sequence: next, json: '{"type":"response.failed"}' } };
      });
      expect(claimed).toBe(true);
      expect(seen).toEqual([['in_progress', 1]]);
      // exactly once
      expect(await store.failStaleRun(id, Date.now() + 60_000, () => undefined)).toBe(false);

      // the old owner: no save, no event, no settlement
      const completed = response(id, null, 'late', 'completed');
      expect(await store.saveOwned({ response: completed, inputItems: [] }, owner)).toBe(false);
      expect(await store.appendEvents(id, [{ sequence: 2, json: '{"n":2}' }], owner)).toBe(false);
      expect(await store.settle({ record: { response: completed, inputItems: [] }, owner, events: [{ sequence: 1, json: '{"type":"response.completed"}' }] })).toBe('not_owner');
      expect((await store.get(id))?.response.status).toBe('failed');
      expect(await store.eventsAfter(id, -1)).toEqual([{ sequence: 0, json: '{"n":0}' }, { sequence: 1, json: '{"type":"response.failed"}' }]);
    });

    it('settles a run in one transaction: events, terminal state, the end of the claim', async () => {
      const id = uid('resp');
      const owner = uid('gateway');
      await store.registerRun(id, owner);
      const done = response(id, null, 'all done', 'completed');
      const events = [0, 1, 2].map((n) => ({ sequence: n, json: JSON.stringify({ n }) }));
      expect(await store.settle({ record: { response: done, inputItems: [storedUser('q')] }, owner, events })).toBe('ok');
      expect((await store.get(id))?.response).toEqual(done);
      expect(await store.eventsAfter(id, -1)).toEqual(events);
      expect(await store.heartbeat(owner, [id])).toEqual({ cancelled: [], lost: [id] });
      expect(await store.staleRuns(Date.now() + 60_000)).not.toContain(id);
    });

    it('settles a turn with its conversation all or nothing (lease held, conversation present)', async () => {
      const conv = await conversations.create({}, [user('start')]);
      const lease = uid('lease');
      expect(await conversations.acquireTurn(conv.id, lease, 60_000)).toBe(true);
      // its holder renews it; another cannot take it
      expect(await conversations.acquireTurn(conv.id, lease, 60_000)).toBe(true);
      expect(await conversations.acquireTurn(conv.id, uid('lease'), 60_000)).toBe(false);

      const id = uid('resp');
      const owner = uid('gateway');
      await store.registerRun(id, owner);
      const done = response(id, null, 'answer');
      const items = [storedUser('question'), ...done.output];

      // a conversation that is gone: nothing at all is written
      expect(await store.settle({ record: { response: done, inputItems: [] }, owner, conversation: { id: uid('conv'), items } })).toBe('conversation_not_found');
      expect(await store.get(id)).toBeUndefined();

      // a lease another turn took over (it had expired): nothing is written either
      expect(await store.settle({ record: { response: done, inputItems: [] }, owner, conversation: { id: conv.id, items, lease: uid('lease') } })).toBe('lease_lost');
      expect(await store.get(id)).toBeUndefined();
      expect((await conversations.items(conv.id))?.length).toBe(1);

      expect(await store.settle({ record: { response: done, inputItems: [] }, owner, conversation: { id: conv.id, items, lease } })).toBe('ok');
      expect((await store.get(id))?.response.status).toBe('completed');
      expect(ids((await conversations.items(conv.id))!).slice(1)).toEqual(ids(items));
      // the lease went with it: the next turn takes the conversation at once
      expect(await conversations.acquireTurn(conv.id, uid('lease'), 60_000)).toBe(true);
    });

    it('renews only a lease still held: never one released, nor one another turn took', async () => {
      const conv = await conversations.create({}, []);
      const lease = uid('lease');
      expect(await conversations.acquireTurn(conv.id, lease, 60_000)).toBe(true);
      expect(await conversations.renewTurn(conv.id, lease, 60_000)).toBe(true);
      // another turn cannot renew (nor take) it
      expect(await conversations.renewTurn(conv.id, uid('lease'), 60_000)).toBe(false);
      expect(await conversations.acquireTurn(conv.id, uid('lease'), 60_000)).toBe(false);

      // released: a renewal that comes late (a heartbeat racing the release) does not take it back
      await conversations.releaseTurn(conv.id, lease);
      expect(await conversations.renewTurn(conv.id, lease, 60_000)).toBe(false);
      const next = uid('lease');
      expect(await conversations.acquireTurn(conv.id, next, 60_000)).toBe(true);

      // expired and taken by another: lost, and the new holder keeps it
      await conversations.releaseTurn(conv.id, next);
      const expiring = uid('lease');
      expect(await conversations.acquireTurn(conv.id, expiring, 1)).toBe(true);
      await sleep(5);
      const taker = uid('lease');
      expect(await conversations.acquireTurn(conv.id, taker, 60_000)).toBe(true);
      expect(await conversations.renewTurn(conv.id, expiring, 60_000)).toBe(false);
      expect(await conversations.acquireTurn(conv.id, uid('lease'), 60_000)).toBe(false);
      // expired but not taken yet: its holder's renewal keeps it
      await conversations.releaseTurn(conv.id, taker);
      const late = uid('lease');
      expect(await conversations.acquireTurn(conv.id, late, 1)).toBe(true);
      await sleep(5);
      expect(await conversations.renewTurn(conv.id, late, 60_000)).toBe(true);
      expect(await conversations.acquireTurn(conv.id, uid('lease'), 60_000)).toBe(false);
    });

    it('queues background runs FIFO per owner; a silent owner\'s queued runs go to another', async () => {
      const owner = uid('gateway');
      const other = uid('gateway');
      const queued = [uid('resp'), uid('resp'), uid('resp')];
      for (const id of queued) {
        await store.registerRun(id, owner, { request: JSON.stringify({ id }) });
        await sleep(2);
      }
      // queued runs are not stale runs (nobody fails them), and the other owner may not take live ones
      expect(await store.staleRuns(Date.now() + 60_000)).not.toContain(queued[0]);
      expect(await store.claimQueuedRun(other, Date.now() - 60_000)).toBeUndefined();

      expect(await store.claimQueuedRun(owner, Date.now() - 60_000)).toEqual({ id: queued[0], request: JSON.stringify({ id: queued[0] }) });
      expect(await store.staleRuns(Date.now() + 60_000)).toContain(queued[0]);
      // the owner went silent: another takes its next queued run, in order
      expect(await store.claimQueuedRun(other, Date.now() + 60_000)).toEqual({ id: queued[1], request: JSON.stringify({ id: queued[1] }) });
      expect(await store.heartbeat(owner, [queued[1]])).toEqual({ cancelled: [], lost: [queued[1]] });
      expect((await store.claimQueuedRun(owner, Date.now() - 60_000))?.id).toBe(queued[2]);
      expect(await store.claimQueuedRun(owner, Date.now() + 60_000)).toBeUndefined();
      for (const id of queued) await store.finishRun(id);
    });

    it('appends events idempotently and returns them in order', async () => {
      const id = uid('resp');
      const event = (sequence: number, tag = '') => ({ sequence, json: JSON.stringify({ type: 'e', sequence_number: sequence, tag }) });
      await store.appendEvents(id, [event(0), event(1), event(2)]);
      // overlapping append: the stored event 2 stays as it was
      await store.appendEvents(id, [event(2, 'again'), event(3), event(4)]);
      await store.appendEvents(id, [event(6), event(5)]);
      await store.appendEvents(id, []);
      expect(await store.eventsAfter(id, -1)).toEqual([0, 1, 2, 3, 4, 5, 6].map((n) => event(n)));
      expect(await store.eventsAfter(id, 3)).toEqual([event(4), event(5), event(6)]);
      expect(await store.eventsAfter(id, 6)).toEqual([]);
      expect(await store.eventsAfter(uid('resp'), -1)).toEqual([]);
    });
  });

  describe('ConversationStore', () => {
    it('creates a conversation with items, minting ids and normalizing messages', async () => {
      const before = Math.floor(Date.now() / 1000);
      const conv = await conversations.create({ topic: 'demo', b: '2', a: '1' }, [
        user('hello'),
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' } as unknown as Item,
        user('kept', 'msg_client_supplied'),
      ]);
      expect(conv.id).toMatch(/^conv_[0-9a-f]{48}$/);
      expect(conv.object).toBe('conversation');
      expect(conv.created_at).toBeGreaterThanOrEqual(before);
      expect(conv.created_at).toBeLessThan(before + 5);
      expect(await conversations.get(conv.id)).toEqual(conv);
      expect(Object.keys((await conversations.get(conv.id))!.metadata)).toEqual(['topic', 'b', 'a']);

      const items = (await conversations.items(conv.id))!;
      expect(items).toHaveLength(3);
      expect(items[0]).toMatchObject({ type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'hello' }] });
      expect(items[0].id).toMatch(/^msg_/);
      expect(items[1]).toMatchObject({ type: 'function_call', call_id: 'call_1' });
      expect(items[1].id).toMatch(/^fc_/);
      expect(items[2].id).toBe('msg_client_supplied');

      const empty = await conversations.create({}, []);
      expect(await conversations.items(empty.id)).toEqual([]);
      expect(await conversations.get(uid('conv'))).toBeUndefined();
      expect(await conversations.items(uid('conv'))).toBeUndefined();
    });

    it('appends items in order', async () => {
      const conv = await conversations.create({}, [user('one')]);
      expect(await conversations.appendItems(conv.id, [user('two'), user('three')])).toBe(true);
      expect(await conversations.appendItems(conv.id, [])).toBe(true);
      expect(await conversations.appendItems(conv.id, [user('four')])).toBe(true);
      const items = (await conversations.items(conv.id))!;
      expect(items.map((item) => (item as unknown as { content: Array<{ text: string }> }).content[0].text)).toEqual(['one', 'two', 'three', 'four']);
      expect(new Set(ids(items)).size).toBe(4);
      expect(await conversations.appendItems(uid('conv'), [user('lost')])).toBe(false);
    });

    it('pages items (asc, desc, after, has_more)', async () => {
      const conv = await conversations.create({}, Array.from({ length: 5 }, (_, i) => user(`item ${i}`)));
      const all = ids((await conversations.items(conv.id))!);

      const first = await conversations.listItems(conv.id, { limit: 2, order: 'asc' });
      expect(ids(first!.data)).toEqual(all.slice(0, 2));
      expect(first).toMatchObject({ firstId: all[0], lastId: all[1], hasMore: true });
      const second = await conversations.listItems(conv.id, { after: first!.lastId!, limit: 2, order: 'asc' });
      expect(ids(second!.data)).toEqual(all.slice(2, 4));
      expect(second!.hasMore).toBe(true);
      const last = await conversations.listItems(conv.id, { after: all[3], limit: 2, order: 'asc' });
      expect(ids(last!.data)).toEqual([all[4]]);
      expect(last!.hasMore).toBe(false);
      expect((await conversations.listItems(conv.id, { limit: 5, order: 'asc' }))!.hasMore).toBe(false);

      const desc = await conversations.listItems(conv.id, { limit: 2, order: 'desc' });
      expect(ids(desc!.data)).toEqual([all[4], all[3]]);
      expect(desc).toMatchObject({ firstId: all[4], lastId: all[3], hasMore: true });
      const descAfter = await conversations.listItems(conv.id, { after: all[1], limit: 2, order: 'desc' });
      expect(ids(descAfter!.data)).toEqual([all[0]]);
      expect(descAfter!.hasMore).toBe(false);

      expect(await conversations.listItems(conv.id, { after: 'msg_unknown', limit: 2, order: 'asc' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
      expect(await conversations.listItems(uid('conv'), { limit: 2, order: 'asc' })).toBeUndefined();
      const empty = await conversations.create({}, []);
      expect(await conversations.listItems(empty.id, { limit: 2, order: 'desc' })).toEqual({ data: [], firstId: null, lastId: null, hasMore: false });
    });

    it('gets and deletes single items; appends go after the last one', async () => {
      const conv = await conversations.create({}, [user('a'), user('b'), user('c')]);
      const [a, b, c] = ids((await conversations.items(conv.id))!);
      expect((await conversations.getItem(conv.id, b))?.id).toBe(b);
      expect(await conversations.getItem(conv.id, 'msg_unknown')).toBeUndefined();
      expect(await conversations.getItem(uid('conv'), b)).toBeUndefined();

      expect(await conversations.deleteItem(conv.id, c)).toBe(true);
      expect(await conversations.getItem(conv.id, c)).toBeUndefined();
      expect(await conversations.deleteItem(conv.id, c)).toBe(false);
      expect(await conversations.deleteItem(uid('conv'), a)).toBe(false);

      await conversations.appendItems(conv.id, [user('d')]);
      const after = ids((await conversations.items(conv.id))!);
      expect(after.slice(0, 2)).toEqual([a, b]);
      expect(after).toHaveLength(3);
      const page = await conversations.listItems(conv.id, { after: a, limit: 10, order: 'asc' });
      expect(ids(page!.data)).toEqual(after.slice(1));
    });

    it('updates metadata', async () => {
      const conv = await conversations.create({ topic: 'old' }, []);
      const updated = await conversations.update(conv.id, { topic: 'new', extra: 'x' });
      expect(updated).toEqual({ ...conv, metadata: { topic: 'new', extra: 'x' } });
      expect(await conversations.get(conv.id)).toEqual(updated);
      expect(await conversations.update(uid('conv'), { topic: 'x' })).toBeUndefined();
    });

    it('deletes a conversation with its items', async () => {
      const conv = await conversations.create({}, [user('a'), user('b')]);
      const [a] = ids((await conversations.items(conv.id))!);
      expect(await conversations.delete(conv.id)).toBe(true);
      expect(await conversations.get(conv.id)).toBeUndefined();
      expect(await conversations.items(conv.id)).toBeUndefined();
      expect(await conversations.getItem(conv.id, a)).toBeUndefined();
      expect(await conversations.listItems(conv.id, { limit: 10, order: 'asc' })).toBeUndefined();
      expect(await conversations.appendItems(conv.id, [user('c')])).toBe(false);
      expect(await conversations.delete(conv.id)).toBe(false);
    });
  });
});

// ---------- PostgreSQL: several replicas on one schema ----------

describe('SQLite migrations', () => {
  it('a data folder of the previous version gains the run queue columns, its rows kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-migrate-'));
    dirs.push(dir);
    const Database = (await import('better-sqlite3')).default;
    const old = new Database(join(dir, 'switchyard.db'));
    old.exec(`CREATE TABLE background_runs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, heartbeat_at INTEGER NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0);
      INSERT INTO background_runs (id, owner, heartbeat_at) VALUES ('resp_old', 'gone', 1)`);
    old.close();
    const store = new SqliteResponseStore(dir);
    try {
      // the old row is a running run of a dead owner: the sweep finds it
      expect(await store.staleRuns(Date.now())).toEqual(['resp_old']);
      await store.registerRun('resp_new', 'me', { request: '{}' });
      expect(await store.claimQueuedRun('me', 0)).toEqual({ id: 'resp_new', request: '{}' });
    } finally {
      await store.close();
    }
    // opening it again changes nothing
    await new SqliteResponseStore(dir).close();
  });
});

describe('PostgreSQL replicas on one schema', () => {
  if (pgUnavailable) {
    postgresAbsent(pgUnavailable);
    return;
  }

  const schema = freshSchema();
  let a: PostgresResponseStore;
  let b: PostgresResponseStore;
  let convA: PostgresConversationStore;
  let convB: PostgresConversationStore;

  beforeAll(async () => {
    // replicas starting at once on a schema that does not exist yet: the migration must not race
    const opened = await Promise.all([0, 1, 2].map(() => PostgresResponseStore.open(PG_URL, { schema, max: 4 })));
    [a, b] = opened;
    await opened[2].close();
    [convA, convB] = await Promise.all([PostgresConversationStore.open(PG_URL, { schema, max: 4 }), PostgresConversationStore.open(PG_URL, { schema, max: 4 })]);
  });

  afterAll(async () => {
    await Promise.all([convA?.close(), convB?.close(), a?.close(), b?.close()]);
  });

  it("each replica sees the other's writes", async () => {
    const [first, second] = [uid('resp'), uid('resp')];
    await a.save({ response: response(first, null, 'from A'), inputItems: [storedUser('a')] });
    await b.save({ response: response(second, first, 'from B'), inputItems: [storedUser('b')] });
    expect((await b.chain(second))?.map((r) => r.response.id)).toEqual([first, second]);
    expect((await a.get(second))?.response.previous_response_id).toBe(first);

    await a.appendEvents(second, [{ sequence: 0, json: '{"n":0}' }]);
    await b.appendEvents(second, [{ sequence: 0, json: '{"n":"dup"}' }, { sequence: 1, json: '{"n":1}' }]);
    expect(await a.eventsAfter(second, -1)).toEqual([{ sequence: 0, json: '{"n":0}' }, { sequence: 1, json: '{"n":1}' }]);

    // a cancel requested through B reaches the owner's heartbeat on A; B sees A's stale run
    const owner = uid('gateway');
    await a.registerRun(second, owner);
    await b.requestCancel(second);
    expect(await a.heartbeat(owner, [second])).toEqual({ cancelled: [second], lost: [] });
    expect(await b.staleRuns(Date.now() + 60_000)).toContain(second);
    await b.finishRun(second);
    expect(await a.staleRuns(Date.now() + 60_000)).not.toContain(second);

    const conv = await convA.create({ by: 'A' }, [user('one')]);
    await convB.appendItems(conv.id, [user('two')]);
    expect((await convA.items(conv.id))?.length).toBe(2);
    expect(await convB.update(conv.id, { by: 'B' })).toMatchObject({ metadata: { by: 'B' } });
    expect((await convA.get(conv.id))?.metadata).toEqual({ by: 'B' });
    expect(await b.delete(first)).toBe(true);
    expect(await a.get(first)).toBeUndefined();
  });

  it('concurrent consumeApproval from both replicas: exactly one ok', async () => {
    for (let round = 0; round < 5; round++) {
      const id = uid('mcpr');
      await a.recordApproval(id, 'digest');
      const verdicts = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).consumeApproval(id, 'digest')));
      expect(verdicts.filter((v) => v === 'ok')).toHaveLength(1);
      expect(verdicts.filter((v) => v === 'used')).toHaveLength(7);
      expect(await b.checkApproval(id, 'digest')).toBe('used');
    }
  });

  it('concurrent appends to one conversation from both replicas keep every item, in distinct positions', async () => {
    const conv = await convA.create({}, [user('start')]);
    const batches = Array.from({ length: 20 }, (_, i) => [user(`batch ${i} a`, uid('msg')), user(`batch ${i} b`, uid('msg')), user(`batch ${i} c`, uid('msg'))]);
    const results = await Promise.all(batches.map((batch, i) => (i % 2 === 0 ? convA : convB).appendItems(conv.id, batch)));
    expect(results.every(Boolean)).toBe(true);

    const items = ids((await convB.items(conv.id))!);
    expect(items).toHaveLength(1 + 3 * batches.length);
    expect(new Set(items).size).toBe(items.length);
    // every batch landed whole and contiguous, in its own order
    for (const batch of batches) {
      const at = items.indexOf(batch[0].id);
      expect(items.slice(at, at + 3)).toEqual(ids(batch));
    }
    const { rows } = await a.pool.query<{ n: string; distinct_positions: string }>(
      `SELECT count(*) AS n, count(DISTINCT position) AS distinct_positions FROM "${schema}".conversation_items WHERE conversation_id = $1`,
      [conv.id],
    );
    expect(rows[0]).toEqual({ n: String(items.length), distinct_positions: String(items.length) });
  });
});
