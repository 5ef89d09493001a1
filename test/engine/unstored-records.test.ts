// What the model saw of the gateway calls of turns not stored (`store: false`), kept in memory
// (src/engine/unstored-records.ts): a client that resends those turns' items — Codex over HTTP
// resends its whole history every request — gets the calls replayed to the model as it first saw
// them, and its history stays held past them (src/engine/held-history.ts `heldInputRun`). Only
// the owner's requests see them; another replica, a restart or an expired record tells the model
// the result is gone, as before.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toModelItems } from '../../src/engine/conversation.js';
import { heldInputRun } from '../../src/engine/held-history.js';
import { NO_RECORDS, UnstoredCallRecords } from '../../src/engine/unstored-records.js';
import type { Item } from '../../src/protocol/responses.js';
import type { GatewayCallRecord } from '../../src/store/store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { DEFAULT_WEB_SEARCH_SETTINGS } from '../../src/tools/web-search/setup.js';
import { deepFreeze } from '../../src/util/freeze.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const record = (itemId: string, output = `results of ${itemId}`, round = `round_${itemId}`): GatewayCallRecord => ({ itemId, callId: `call_${itemId}`, name: 'web_search', arguments: `{"query":"${itemId}"}`, output, round });

describe('UnstoredCallRecords', () => {
  it("finds a record by its item id for its owner only, until it expires", () => {
    const kept = new UnstoredCallRecords({ ttlMs: 1_000, maxBytes: 1 << 20 });
    kept.keep([record('ws_1'), record('ws_2')], 'alice', 10_000);
    expect(kept.find('alice', 'ws_1', 10_500)).toEqual(record('ws_1'));
    expect(kept.find('alice', 'ws_2', 10_500)?.output).toBe('results of ws_2');
    expect(kept.find('bob', 'ws_1', 10_500)).toBeUndefined();
    // a lookup for an owner, as a turn uses it: its own records only, at the time it asks
    expect(kept.of('alice').get('ws_1')).toBeUndefined();
    kept.keep([record('ws_4')], 'alice');
    expect(kept.of('alice').get('ws_4')).toEqual(record('ws_4'));
    expect(kept.of('bob').get('ws_4')).toBeUndefined();
    expect(kept.find('alice', 'ws_3', 10_500)).toBeUndefined();
    expect(kept.find('alice', 'ws_1', 11_000)).toBeUndefined();
    // expired ones are let go when the next turn's are kept
    kept.keep([record('ws_3')], 'alice', 11_000);
    expect(kept.find('alice', 'ws_4', 11_000)).toBeDefined();
    expect(kept.size).toBe(2);
  });

  it('keeps the newest within its bytes, the oldest going first; a record larger than all of them is not kept', () => {
    const kept = new UnstoredCallRecords({ ttlMs: 60_000, maxBytes: 3_000 });
    for (let i = 0; i < 10; i++) kept.keep([record(`ws_${i}`, 'x'.repeat(800))], 'alice', 1_000 + i);
    const held = Array.from({ length: 10 }, (_, i) => kept.find('alice', `ws_${i}`, 2_000) !== undefined);
    expect(held).toEqual([false, false, false, false, false, false, false, true, true, true]);
    kept.keep([record('ws_huge', 'x'.repeat(5_000))], 'alice', 2_000);
    expect(kept.find('alice', 'ws_huge', 2_000)).toBeUndefined();
    expect(kept.find('alice', 'ws_9', 2_000)).toBeDefined();
  });

  it('kept again, a record is the newest (its place and its time)', () => {
    const kept = new UnstoredCallRecords({ ttlMs: 1_000, maxBytes: 1 << 20 });
    kept.keep([record('ws_1', 'first')], 'alice', 0);
    kept.keep([record('ws_2')], 'alice', 500);
    kept.keep([record('ws_1', 'second')], 'alice', 900);
    expect(kept.find('alice', 'ws_1', 1_200)?.output).toBe('second');
    expect(kept.find('alice', 'ws_2', 1_200)).toBeDefined();
    expect(kept.size).toBe(2);
  });

  it('with no time to live keeps nothing', () => {
    const kept = new UnstoredCallRecords({ ttlMs: 0, maxBytes: 1 << 20 });
    kept.keep([record('ws_1')], 'alice');
    expect(kept.size).toBe(0);
  });
});

let next = 0;
const id = (prefix: string) => `${prefix}_${++next}`;
const user = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const assistant = (text: string): Item => ({ id: id('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });
const search = (itemId = id('ws')): Item => ({ id: itemId, type: 'web_search_call', status: 'completed', action: { type: 'search', query: itemId } }) as Item;
const turns = (n: number): Item[] => Array.from({ length: n }, (_, i) => [user(`q${i}`), assistant(`a${i}`)]).flat();
const recordsOf = (...records: GatewayCallRecord[]) => new Map(records.map((r) => [r.itemId, r]));

describe('a resent history held past the hosted calls of turns not stored', () => {
  it('holds the items after a call whose record is held, as converting the whole history with it gives', () => {
    const call = search();
    const items = deepFreeze([...turns(10), call, assistant('found it'), ...turns(5)]);
    const records = recordsOf(record(call.id));
    const held = heldInputRun(items, items, records, 'alice')!;
    expect(held.length).toBe(items.length);
    expect(held.model.items).toEqual(toModelItems(items, new ToolRegistry(), records));
    expect(held.model.owner).toBe('alice');
    // without the record the run ends before the call, as before
    expect(heldInputRun(items, items, NO_RECORDS, 'alice')!.length).toBe(20);
  });

  it("another owner's run is never used: its own records or none", () => {
    const call = search();
    const items = deepFreeze([...turns(10), call, assistant('found it'), ...turns(5)]);
    const alice = heldInputRun(items, items, recordsOf(record(call.id, 'what alice found')), 'alice')!;
    const bob = heldInputRun(items, items, recordsOf(record(call.id, 'what bob found')), 'bob')!;
    expect(bob.model).not.toBe(alice.model);
    expect(JSON.stringify(bob.model.items)).toContain('what bob found');
    expect(JSON.stringify(bob.model.items)).not.toContain('what alice found');
    const carol = heldInputRun(items, items, NO_RECORDS, 'carol')!;
    expect(carol.length).toBe(20);
    expect(JSON.stringify(carol.model.items)).not.toContain('found');
  });

  it('never ends inside a round of calls: the run stops before a round it cannot hold whole', () => {
    const [first, second] = [search(), search()];
    // two calls of one round: the second's record is gone, so the run ends before the first
    const items = deepFreeze([...turns(10), first, second, assistant('both'), user('more')]);
    const held = heldInputRun(items, items, recordsOf(record(first.id, 'one', 'r1')), 'alice')!;
    expect(held.length).toBe(20);
    // both held: one run, the calls then their results, as the model saw them
    const both = recordsOf(record(first.id, 'one', 'r1'), record(second.id, 'two', 'r1'));
    const whole = heldInputRun(items, items, both, 'alice')!;
    expect(whole.length).toBe(items.length);
    expect(whole.model.items).toEqual(toModelItems(items, new ToolRegistry(), both));
    expect(whole.model.items.slice(20, 24).map((item) => item.type)).toEqual(['function_call', 'function_call', 'function_call_output', 'function_call_output']);
  });

  it('a kept run ending with a call is not extended by a call that may join its round: made anew', () => {
    const [first, second] = [search(), search()];
    const before = deepFreeze([...turns(10), first]);
    const records = recordsOf(record(first.id, 'one', 'r1'), record(second.id, 'two', 'r1'));
    const short = heldInputRun(before, before, records, 'alice')!;
    expect(short.length).toBe(before.length);
    const grown = deepFreeze([...before, second, assistant('both')]);
    const run = heldInputRun(grown, grown, records, 'alice')!;
    expect(run.model.items).toEqual(toModelItems(grown, new ToolRegistry(), records));
    expect(run.model.items[20]).not.toBe(short.model.items[20]);
  });
});

describe('through the gateway: a store: false history with web searches, resent whole', () => {
  const ALICE = 'sk-alice-unstored-records';
  const BOB = 'sk-bob-unstored-records';
  let apis: FakeSearchApis;
  let tg: TestGateway;
  let replica: TestGateway;
  const tools = [{ type: 'web_search' as const }];
  const searchThenAnswer = (query: string) => scripted({ rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query } }] }, { text: 'I read it [1].' }] }, `search ${query}`);
  const answer = (text: string) => scripted({ rounds: [{ text }] }, text);

  beforeAll(async () => {
    apis = await startFakeSearchApis();
    const config = {
      auth: { keys: [{ name: 'alice', key: ALICE }, { name: 'bob', key: BOB }] },
      webSearch: { ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: apis.url, timeoutMs: 2_000, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } },
    } as any;
    tg = await startTestGateway({ config });
    // another replica: its own process memory, the same upstream
    replica = await startTestGateway({ config, simulator: tg.simulator });
  });
  afterAll(async () => {
    await replica?.close();
    await tg?.close();
    await apis?.close();
  });

  const clientOf = (gateway: TestGateway, key: string) => new OpenAI({ baseURL: gateway.baseURL, apiKey: key, maxRetries: 0 });
  /** Every tool result the model was shown in the last upstream request. */
  const toolResults = () => (tg.simulator.requests.at(-1)!.body.messages as any[]).filter((m) => m.role === 'tool').map((m) => m.content as string);

  it('every turn shows the model every earlier search result as it first saw it; another tenant, replica or a restart is told it is gone', async () => {
    const alice = clientOf(tg, ALICE);
    let history: any[] = [];
    const seen: string[] = [];
    for (const query of ['tokio tutorial', 'rust borrow checker', 'async traits']) {
      const input = [...history, { role: 'user', content: searchThenAnswer(query) }];
      const response = await alice.responses.create({ model: 'm', store: false, input, tools } as any);
      expect(response.output.map((i) => i.type)).toEqual(['web_search_call', 'message']);
      // what the model saw of this search, when it made it: the last tool result of the round after it
      seen.push(toolResults().at(-1)!);
      expect(seen.at(-1)).toContain(`Search results for "${query}"`);
      // the earlier searches, shown again this turn exactly as they were
      expect(toolResults().slice(0, -1)).toEqual(seen.slice(0, -1));
      history = [...input, ...response.output];
      // a few turns without searches between them
      for (let i = 0; i < 3; i++) {
        const next = [...history, { role: 'user', content: answer(`note ${query} ${i}`) }];
        const plain = await alice.responses.create({ model: 'm', store: false, input: next, tools } as any);
        expect(toolResults()).toEqual(seen);
        history = [...next, ...plain.output];
      }
    }
    const final = [...history, { role: 'user', content: answer('what did you read?') }];
    // bob sends alice's items (their ids): none of alice's results reach his model
    await clientOf(tg, BOB).responses.create({ model: 'm', store: false, input: final, tools } as any);
    expect(toolResults()).toHaveLength(3);
    for (const result of toolResults()) expect(result).toMatch(/no longer available/);
    // alice again, on this replica: all of them
    await alice.responses.create({ model: 'm', store: false, input: final, tools } as any);
    expect(toolResults()).toEqual(seen);
    // another replica holds none of them
    await clientOf(replica, ALICE).responses.create({ model: 'm', store: false, input: final, tools } as any);
    for (const result of toolResults()) expect(result).toMatch(/no longer available/);
    // nor does this one after a restart: nothing of a turn not stored was written
    await tg.restart();
    await clientOf(tg, ALICE).responses.create({ model: 'm', store: false, input: final, tools } as any);
    for (const result of toolResults()) expect(result).toMatch(/no longer available/);
  });
});
