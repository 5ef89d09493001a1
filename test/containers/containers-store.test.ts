// One conformance suite over both container stores: SQLite (a data folder) and PostgreSQL (a
// fresh schema per run, dropped afterwards).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresContainerStore } from '../../src/containers/postgres-containers.js';
import { SqliteContainerStore } from '../../src/containers/sqlite-containers.js';
import { DEFAULT_TENANT, type ContainerRecord, type ContainerStore } from '../../src/containers/store.js';
import { PG_URL, probePostgres, REQUIRE_PG } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const schema = `switchyard_cntr_test_${randomBytes(6).toString('hex')}`;
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (pgUnavailable) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
});

let counter = 0;
const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}${counter++}`;

function container(overrides: Partial<ContainerRecord> = {}): ContainerRecord {
  return { id: uid('cntr'), owner: DEFAULT_TENANT, name: 'c', createdAt: 1_000, lastActiveAt: 1_000, expiresAfterMinutes: 20, memoryLimit: '1g', ...overrides };
}

const backends: Array<[string, string | undefined, () => Promise<ContainerStore>]> = [
  ['SQLite', undefined, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-cntr-'));
    dirs.push(dir);
    return new SqliteContainerStore(dir);
  }],
  ['PostgreSQL', pgUnavailable && !REQUIRE_PG ? pgUnavailable : undefined, () => PostgresContainerStore.open(PG_URL, { schema, max: 4 })],
];

describe.each(backends)('container store on %s', (_name, skipReason, open) => {
  let store: ContainerStore;
  beforeEach(async () => {
    if (!skipReason) store = await open();
  });
  afterEach(async () => {
    await store?.close();
  });

  it.skipIf(skipReason !== undefined)(`creates, reads (scoped to the owner), touches and deletes${skipReason ? ` — skipped: ${skipReason}` : ''}`, async () => {
    const record = container({ name: 'analysis', memoryLimit: '4g' });
    await store.create(record);
    expect(await store.get(record.id, DEFAULT_TENANT)).toEqual(record);
    expect(await store.get(record.id, 'another-tenant')).toBeUndefined();
    await store.touch(record.id, 5_000);
    await store.touch(record.id, 2_000); // never moves back
    expect((await store.get(record.id, DEFAULT_TENANT))!.lastActiveAt).toBe(5_000);
    expect(await store.delete(record.id)).toBe(true);
    expect(await store.delete(record.id)).toBe(false);
    expect(await store.get(record.id, DEFAULT_TENANT)).toBeUndefined();
  });

  it.skipIf(skipReason !== undefined)('lists one owner\'s containers in pages, both orders', async () => {
    const owner = uid('tenant');
    const made = [];
    for (let i = 0; i < 5; i++) {
      const record = container({ owner });
      await store.create(record);
      made.push(record.id);
    }
    await store.create(container({ owner: uid('other') }));
    const first = await store.list(owner, { limit: 2, order: 'asc' });
    expect(first.data.map((c) => c.id)).toEqual(made.slice(0, 2));
    expect(first.hasMore).toBe(true);
    const rest = await store.list(owner, { limit: 10, order: 'asc', after: made[1] });
    expect(rest.data.map((c) => c.id)).toEqual(made.slice(2));
    expect(rest.hasMore).toBe(false);
    const desc = await store.list(owner, { limit: 10, order: 'desc' });
    expect(desc.data.map((c) => c.id)).toEqual([...made].reverse());
  });

  it.skipIf(skipReason !== undefined)('finds containers idle past their expiry', async () => {
    const stale = container({ lastActiveAt: 100, expiresAfterMinutes: 1 });
    const fresh = container({ lastActiveAt: 10_000, expiresAfterMinutes: 1 });
    await store.create(stale);
    await store.create(fresh);
    const expired = (await store.expired(200, 1000)).map((c) => c.id);
    expect(expired).toContain(stale.id);
    expect(expired).not.toContain(fresh.id);
  });

  it.skipIf(skipReason !== undefined)('keeps one record per path (stable id), lists and deletes files; a container delete takes its files', async () => {
    const record = container();
    await store.create(record);
    const a = await store.putFile({ id: uid('cfile'), containerId: record.id, path: '/mnt/data/a.csv', bytes: 10, createdAt: 1, source: 'assistant' });
    const again = await store.putFile({ id: uid('cfile'), containerId: record.id, path: '/mnt/data/a.csv', bytes: 25, createdAt: 2, source: 'user' });
    expect(again).toEqual({ ...a, bytes: 25 });
    const b = await store.putFile({ id: uid('cfile'), containerId: record.id, path: '/mnt/data/b.png', bytes: 3, createdAt: 3, source: 'user' });
    expect(await store.getFile(record.id, b.id)).toEqual(b);
    expect(await store.getFile('cntr_other', b.id)).toBeUndefined();
    expect((await store.listFiles(record.id, { limit: 1, order: 'asc' })).data.map((f) => f.id)).toEqual([a.id]);
    expect((await store.listFiles(record.id, { limit: 5, order: 'asc', after: a.id })).data.map((f) => f.id)).toEqual([b.id]);
    expect((await store.allFiles(record.id)).map((f) => f.path)).toEqual(['/mnt/data/a.csv', '/mnt/data/b.png']);
    expect(await store.deleteFile(record.id, a.id)).toBe(true);
    expect(await store.deleteFile(record.id, a.id)).toBe(false);
    await store.delete(record.id);
    expect(await store.allFiles(record.id)).toEqual([]);
  });
});
