// The chain cache (src/store/chain-cache.ts): a continued turn reads its previous_response_id
// chain from memory, and every deletion — on this store or another replica's — is seen by the
// next read. Unit tests of the cache, then both backends with two store instances on one
// database (as two replicas). PostgreSQL blocks skip, saying why, when the server is absent
// (SWITCHYARD_REQUIRE_POSTGRES=1 makes that a failure).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Item, ResponseObject } from '../../src/protocol/responses.js';
import { ChainCache, responseRow } from '../../src/store/chain-cache.js';
import { PostgresResponseStore } from '../../src/store/postgres.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { ResponseStore, StoredResponse } from '../../src/store/store.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const uid = (prefix: string): string => `${prefix}_${randomBytes(8).toString('hex')}`;

function record(id: string, previous: string | null, status: ResponseObject['status'] = 'completed', text = `answer of ${id}`): StoredResponse {
  const response = {
    id,
    object: 'response',
    created_at: 1_700_000_000,
    status,
    model: 'test-model',
    previous_response_id: previous,
    output: [{ id: uid('msg'), type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
  } as unknown as ResponseObject;
  const input = [{ id: uid('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: `question of ${id}` }] }] as unknown as Item[];
  return { response, inputItems: input, owner: 'default' };
}

const ids = (chain: readonly StoredResponse[] | undefined): string[] => (chain ?? []).map((r) => r.response.id);

describe('ChainCache', () => {
  it('holds a settled chain read whole, frozen, until the deletion epoch moves', () => {
    const cache = new ChainCache(1 << 20);
    const chain = [record('r1', null), record('r2', 'r1')];
    cache.fill(chain, 100, 0);
    expect(ids(cache.get('r2', 0))).toEqual(['r1', 'r2']);
    expect(Object.isFrozen(cache.get('r2', 0)![1].response.output[0])).toBe(true);
    expect(() => {
      (cache.get('r2', 0)![1].inputItems as Item[]).push(record('x', null).inputItems[0]);
    }).toThrow(TypeError);
    // a deletion somewhere (epoch 1): the next read goes to the database
    expect(cache.get('r2', 1)).toBeUndefined();
    expect(cache.get('r2', 0)).toBeUndefined();
  });

  it('never holds a chain whose tip is still running', () => {
    const cache = new ChainCache(1 << 20);
    cache.fill([record('r1', null), record('r2', 'r1', 'in_progress')], 100, 0);
    expect(cache.get('r2', 0)).toBeUndefined();
  });

  it('a settled response written on a held chain extends it; one on an unknown parent is not held', () => {
    const cache = new ChainCache(1 << 20);
    cache.fill([record('r1', null)], 100, 3);
    cache.written(responseRow(record('r2', 'r1')));
    expect(ids(cache.get('r2', 3))).toEqual(['r1', 'r2']);
    // the extended entry keeps the epoch its parent was read at
    expect(cache.get('r2', 4)).toBeUndefined();
    cache.written(responseRow(record('r9', 'unknown')));
    expect(cache.get('r9', 3)).toBeUndefined();
    // still running: not held (its record will change)
    cache.fill([record('a1', null)], 100, 3);
    cache.written(responseRow(record('a2', 'a1', 'in_progress')));
    expect(cache.get('a2', 3)).toBeUndefined();
  });

  it('a held response written again drops everything (the held chains may not match it any more)', () => {
    const cache = new ChainCache(1 << 20);
    cache.fill([record('r1', null)], 100, 0);
    cache.written(responseRow(record('r2', 'r1')));
    cache.fill([record('s1', null)], 100, 0);
    cache.written(responseRow(record('r1', null, 'completed', 'changed')));
    expect(cache.get('r2', 0)).toBeUndefined();
    expect(cache.get('s1', 0)).toBeUndefined();
  });

  it('evicts the least recently used chains past its byte budget, and skips a chain larger than all of it', () => {
    const cache = new ChainCache(250);
    cache.fill([record('a', null)], 100, 0);
    cache.fill([record('b', null)], 100, 0);
    expect(cache.get('a', 0)).toBeDefined(); // a is now more recent than b
    cache.fill([record('c', null)], 100, 0);
    expect(cache.get('b', 0)).toBeUndefined();
    expect(cache.get('a', 0)).toBeDefined();
    expect(cache.get('c', 0)).toBeDefined();
    cache.fill([record('huge', null)], 1_000, 0);
    expect(cache.get('huge', 0)).toBeUndefined();
    expect(cache.get('a', 0)).toBeDefined();
  });
});

describe('ChainCache and call records', () => {
  it("count against the byte budget: a turn whose search read a long page is not held past it", () => {
    const row = responseRow(record('r2', 'r1'));
    const budget = 100 + row.response.length + row.inputItems.length + 5_000;
    const cache = new ChainCache(budget);
    cache.fill([record('r1', null)], 100, 0);
    const read = (output: string) => [{ itemId: 'ws_1', callId: 'call_1', name: 'web_search', arguments: '{}', output, round: 'call_1' }];
    cache.written(row, read('a short page'));
    expect(cache.get('r2', 0)?.[1].callRecords).toEqual(read('a short page'));
    cache.fill([record('s1', null)], 100, 0);
    cache.written(responseRow(record('s2', 's1')), read('x'.repeat(10_000)));
    expect(cache.get('s2', 0)).toBeUndefined();
  });
});

describe('store.chainCacheMb', () => {
  it('0 keeps nothing: every read goes to the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-chain-cache-off-'));
    dirs.push(dir);
    const store = new SqliteResponseStore(dir, { chainCacheBytes: 0 });
    try {
      await store.settle({ record: record('off1', null) });
      await store.settle({ record: record('off2', 'off1') });
      const first = await store.chain('off2');
      const second = await store.chain('off2');
      expect(ids(second)).toEqual(['off1', 'off2']);
      expect(second![0]).not.toBe(first![0]);
      expect(Object.isFrozen(second![0])).toBe(false);
    } finally {
      await store.close();
    }
  });
});

interface Replicas {
  a: ResponseStore;
  b: ResponseStore;
  close(): Promise<void>;
}

const dirs: string[] = [];
const schemas: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!pgUnavailable) await dropSchemas(schemas);
});

const backends: Array<{ name: string; unavailable?: string; open(): Promise<Replicas> }> = [
  {
    name: 'SQLite (two stores on one file)',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-chain-cache-'));
      dirs.push(dir);
      const a = new SqliteResponseStore(dir);
      const b = new SqliteResponseStore(dir);
      return { a, b, close: async () => (await a.close(), await b.close()) };
    },
  },
  {
    name: 'PostgreSQL (two stores on one schema)',
    unavailable: pgUnavailable,
    async open() {
      const schema = `switchyard_test_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      const a = await PostgresResponseStore.open(PG_URL, { schema, max: 2 });
      const b = await PostgresResponseStore.open(PG_URL, { schema, max: 2 });
      return { a, b, close: async () => (await a.close(), await b.close()) };
    },
  },
];

describe.each(backends)('chains through the cache: $name', (backend) => {
  if (backend.unavailable) {
    postgresAbsent(backend.unavailable);
    return;
  }

  /** r1 … rN saved on `a` (each settled on top of the previous), read once on `a`. */
  async function chainOf(stores: Replicas, n: number): Promise<string[]> {
    const names = Array.from({ length: n }, () => uid('resp'));
    for (const [i, id] of names.entries()) await stores.a.settle({ record: record(id, i === 0 ? null : names[i - 1]) });
    return names;
  }

  it('a continued chain reads the same as from the database, and the cache extends with each settled turn', async () => {
    const stores = await backend.open();
    try {
      const names = await chainOf(stores, 5);
      const first = await stores.a.chain(names[4]); // read whole, now held
      expect(ids(first)).toEqual(names);
      const next = uid('resp');
      await stores.a.settle({ record: record(next, names[4]) });
      const extended = await stores.a.chain(next);
      expect(ids(extended)).toEqual([...names, next]);
      // the held records are the ones read before (not re-read), and equal what the other replica reads
      expect(extended![0]).toBe(first![0]);
      expect(JSON.parse(JSON.stringify(extended))).toEqual(JSON.parse(JSON.stringify(await stores.b.chain(next))));
    } finally {
      await stores.close();
    }
  });

  it("each held record carries the model-facing records of its gateway calls: read with the chain, or with the settled turn that extends it", async () => {
    const stores = await backend.open();
    try {
      const callRecord = (responseId: string, n: number) => ({ itemId: uid('ws'), callId: uid('call'), name: 'web_search', arguments: `{"query":"${responseId} ${n}"}`, output: `results ${n}`, round: `round_${responseId}` });
      const names = Array.from({ length: 3 }, () => uid('resp'));
      const written = new Map<string, object[]>();
      for (const [i, id] of names.entries()) {
        // the middle turn made no gateway call
        const records = i === 1 ? [] : [callRecord(id, 1), callRecord(id, 2)];
        if (records.length > 0) written.set(id, records);
        await stores.a.settle({ record: record(id, i === 0 ? null : names[i - 1]), ...(records.length > 0 ? { callRecords: { responseId: id, records, owner: 'default' } } : {}) });
      }
      const carried = (chain: readonly StoredResponse[] | undefined) => (chain ?? []).map((stored) => stored.callRecords);
      // read whole from the database (nothing held yet)
      expect(carried(await stores.a.chain(names[2]))).toEqual([written.get(names[0]), undefined, written.get(names[2])]);
      // extended in memory by the turn just settled on it
      const next = uid('resp');
      const nextRecords = [callRecord(next, 1)];
      await stores.a.settle({ record: record(next, names[2]), callRecords: { responseId: next, records: nextRecords, owner: 'default' } });
      const extended = await stores.a.chain(next);
      expect(carried(extended)).toEqual([written.get(names[0]), undefined, written.get(names[2]), nextRecords]);
      expect(Object.isFrozen(extended!.at(-1)!.callRecords)).toBe(true);
      // another replica reads the same from the database
      expect(JSON.parse(JSON.stringify(await stores.b.chain(next)))).toEqual(JSON.parse(JSON.stringify(extended)));
    } finally {
      await stores.close();
    }
  });

  it('a response deleted on another replica is gone from the next read of a held chain', async () => {
    const stores = await backend.open();
    try {
      const names = await chainOf(stores, 4);
      expect(ids(await stores.a.chain(names[3]))).toEqual(names);
      expect(await stores.b.delete(names[1])).toBe(true);
      // the chain is cut where the deleted response was, as the database says
      expect(ids(await stores.a.chain(names[3]))).toEqual(names.slice(2));
      expect(ids(await stores.b.chain(names[3]))).toEqual(names.slice(2));
    } finally {
      await stores.close();
    }
  });

  it('a retention sweep on another replica is seen too; deleting a missing id changes nothing', async () => {
    const stores = await backend.open();
    try {
      const names = await chainOf(stores, 3);
      const held = await stores.a.chain(names[2]);
      expect(await stores.b.delete(uid('resp'))).toBe(false);
      expect(await stores.a.chain(names[2])).toBe(held); // still the held chain (no deletion happened)
      expect(await stores.b.pruneResponses(1_800_000_000, 10)).toBe(3);
      expect(await stores.a.chain(names[2])).toBeUndefined();
    } finally {
      await stores.close();
    }
  });
});
