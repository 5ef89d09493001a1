// One conformance suite for every FileSearchStore implementation (SQLite in memory, SQLite in a
// data folder, PostgreSQL in a fresh schema), like test/store/store-conformance.test.ts: metadata,
// cursors, tenant scoping, the durable ingestion queue (claims, leases, publish-or-nothing),
// batch cancellation and the keyword index.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresFileSearchStore } from '../../src/files/postgres-store.js';
import { SqliteFileSearchStore } from '../../src/files/sqlite-store.js';
import { DEFAULT_OWNER, type ChunkingStrategy, type FileSearchStore } from '../../src/files/store.js';
import { normalize } from '../../src/retrieval/embedder.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const schemas: string[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!pgUnavailable) await dropSchemas(schemas);
});

const CHUNKING: ChunkingStrategy = { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 };
const owner = DEFAULT_OWNER;

const backends: Array<[string, () => Promise<FileSearchStore>]> = [
  ['SQLite in memory', async () => new SqliteFileSearchStore(':memory:')],
  [
    'SQLite in a data folder',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-fs-'));
      dirs.push(dir);
      return new SqliteFileSearchStore(dir);
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const schema = `switchyard_fss_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return PostgresFileSearchStore.open(PG_URL, { schema, max: 3 });
    },
  ],
];

const vec = (...values: number[]) => normalize(Float32Array.from(values));

for (const [name, open] of backends) {
  describe(`FileSearchStore conformance: ${name}`, () => {
    if (name === 'PostgreSQL' && pgUnavailable) {
      postgresAbsent(pgUnavailable);
      return;
    }
    let store: FileSearchStore;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    const addFile = (id: string, who = owner, purpose = 'assistants') => store.insertFile({ id, owner: who, filename: `${id}.txt`, purpose, bytes: 10, createdAt: 1_000, expiresAt: null });
    const addStore = (id: string, who = owner) => store.insertStore({ id, owner: who, name: id, createdAt: 1_000, lastActiveAt: 1_000, metadata: {}, expiresAfter: null, keywordOnlyReason: null });

    it('pages files by insertion order with after cursors, both directions, filtered by purpose', async () => {
      for (const id of ['f1', 'f2', 'f3', 'f4']) await addFile(id, owner, id === 'f3' ? 'batch' : 'assistants');
      const first = await store.listFiles(owner, { limit: 2, order: 'asc' });
      expect(first.data.map((f) => f.id)).toEqual(['f1', 'f2']);
      expect(first.hasMore).toBe(true);
      const rest = await store.listFiles(owner, { limit: 2, order: 'asc', after: 'f2' });
      expect(rest.data.map((f) => f.id)).toEqual(['f3', 'f4']);
      expect(rest.hasMore).toBe(false);
      expect((await store.listFiles(owner, { limit: 10, order: 'desc', after: 'f3' })).data.map((f) => f.id)).toEqual(['f2', 'f1']);
      expect((await store.listFiles(owner, { limit: 10, order: 'asc', purpose: 'batch' })).data.map((f) => f.id)).toEqual(['f3']);
    });

    it('scopes every object by owner (tenant)', async () => {
      await addFile('mine');
      await addFile('theirs', 'tenant-b');
      await addStore('vs_b', 'tenant-b');
      expect(await store.getFile(owner, 'theirs')).toBeUndefined();
      expect(await store.getStore(owner, 'vs_b')).toBeUndefined();
      expect((await store.listFiles(owner, { limit: 10, order: 'asc' })).data.map((f) => f.id)).toEqual(['mine']);
      expect(await store.deleteFile(owner, 'theirs')).toBe(false);
      expect(await store.deleteStore(owner, 'vs_b')).toBe(false);
      expect(await store.getFile('tenant-b', 'theirs')).toMatchObject({ owner: 'tenant-b' });
    });

    it('queues attached files durably: claim, lease, publish once, counts as OpenAI', async () => {
      await addFile('f1');
      await addFile('f2');
      await addStore('vs_1');
      await store.attachFiles(owner, 'vs_1', [{ fileId: 'f1', attributes: { lang: 'en' }, chunking: CHUNKING, batchId: null }, { fileId: 'f2', attributes: {}, chunking: CHUNKING, batchId: null }], 2_000);
      expect((await store.getStore(owner, 'vs_1'))!.fileCounts).toEqual({ in_progress: 2, completed: 0, failed: 0, cancelled: 0, total: 2 });

      const a = await store.claimJob('w1', 10_000, 5_000);
      const b = await store.claimJob('w2', 10_000, 5_000);
      expect([a!.fileId, b!.fileId].sort()).toEqual(['f1', 'f2']);
      expect(await store.claimJob('w3', 10_000, 5_000)).toBeUndefined(); // both leased
      // an expired lease is taken over; the old holder can then neither renew nor publish
      const taken = await store.claimJob('w3', 20_000, 5_000);
      expect(taken?.fileId).toBe(a!.fileId);
      expect(await store.renewClaim(a!, 'w1', 20_001, 5_000)).toBe(false);
      expect(await store.publishFile(a!, 'w1', [{ text: 'stale' }], 5)).toBe(false);

      expect(await store.publishFile(taken!, 'w3', [{ text: 'alpha beta', embedding: vec(1, 0) }, { text: 'gamma', embedding: vec(0, 1) }], 100)).toBe(true);
      expect(await store.publishFile(taken!, 'w3', [{ text: 'twice' }], 1)).toBe(false); // published once
      await store.failFile(b!, 'w2', { code: 'invalid_file', message: 'bad' });
      const view = (await store.getStore(owner, 'vs_1'))!;
      expect(view.fileCounts).toEqual({ in_progress: 0, completed: 1, failed: 1, cancelled: 0, total: 2 });
      expect(view.usageBytes).toBe(100);
      expect((await store.getStoreFile(owner, 'vs_1', b!.fileId))!.lastError).toEqual({ code: 'invalid_file', message: 'bad' });
      expect(await store.fileChunks('vs_1', taken!.fileId)).toEqual(['alpha beta', 'gamma']);
      const vectors = await store.loadVectors('vs_1');
      expect(vectors.dimensions).toBe(2);
      expect(Array.from(vectors.matrix)).toEqual([1, 0, 0, 1]);
    });

    it('gives back claims on shutdown so a restart resumes at once', async () => {
      await addFile('f1');
      await addStore('vs_1');
      await store.attachFiles(owner, 'vs_1', [{ fileId: 'f1', attributes: {}, chunking: CHUNKING, batchId: null }], 2_000);
      expect(await store.claimJob('w1', 10_000, 60_000)).toBeDefined();
      await store.releaseClaims('w1');
      expect((await store.claimJob('w2', 10_001, 60_000))?.fileId).toBe('f1');
    });

    it('cancels a batch: its running files become cancelled, a lone attach is untouched', async () => {
      for (const id of ['f1', 'f2', 'f3']) await addFile(id);
      await addStore('vs_1');
      await store.insertBatch({ id: 'vsfb_1', storeId: 'vs_1', owner, createdAt: 2_000, cancelled: false });
      await store.attachFiles(owner, 'vs_1', [{ fileId: 'f1', attributes: {}, chunking: CHUNKING, batchId: 'vsfb_1' }, { fileId: 'f2', attributes: {}, chunking: CHUNKING, batchId: 'vsfb_1' }], 2_000);
      await store.attachFiles(owner, 'vs_1', [{ fileId: 'f3', attributes: {}, chunking: CHUNKING, batchId: null }], 2_000);
      const job = (await store.claimJob('w1', 10_000, 60_000))!;
      const batch = (await store.cancelBatch(owner, 'vs_1', 'vsfb_1'))!;
      expect(batch.cancelled).toBe(true);
      expect(batch.fileCounts).toEqual({ in_progress: 0, completed: 0, failed: 0, cancelled: 2, total: 2 });
      expect(await store.publishFile(job, 'w1', [{ text: 'late' }], 1)).toBe(false);
      expect((await store.getStoreFile(owner, 'vs_1', 'f3'))!.status).toBe('in_progress');
      const listed = await store.listStoreFiles(owner, 'vs_1', { limit: 10, order: 'asc', batchId: 'vsfb_1', status: 'cancelled' });
      expect(listed.data.map((f) => f.fileId)).toEqual(['f1', 'f2']);
    });

    it('keyword search: sanitised terms, restricted to allowed files, best first', async () => {
      await addFile('f1');
      await addFile('f2');
      await addStore('vs_1');
      await store.attachFiles(owner, 'vs_1', [{ fileId: 'f1', attributes: {}, chunking: CHUNKING, batchId: null }, { fileId: 'f2', attributes: {}, chunking: CHUNKING, batchId: null }], 2_000);
      for (let i = 0; i < 2; i++) {
        const job = (await store.claimJob('w', 10_000, 60_000))!;
        const texts = job.fileId === 'f1' ? ['the aurora lights dance over the fjord', 'aurora aurora borealis'] : ['quarterly revenue of the aurora bicycle'];
        await store.publishFile(job, 'w', texts.map((text) => ({ text })), 10);
      }
      const hits = await store.keywordSearch('vs_1', ['aurora', 'borealis'], null, 10);
      expect(hits.length).toBe(3);
      const top = await store.chunkTexts([hits[0].chunkId]);
      expect(top[0].text).toBe('aurora aurora borealis');
      const onlyF2 = await store.keywordSearch('vs_1', ['aurora'], ['f2'], 10);
      expect((await store.chunkTexts(onlyF2.map((h) => h.chunkId))).map((c) => c.fileId)).toEqual(['f2']);
      expect(await store.keywordSearch('vs_1', ['or', 'not', 'near'], null, 10)).toEqual([]);
      expect(await store.keywordSearch('vs_missing', ['aurora'], null, 10)).toEqual([]);
      // detaching removes the chunks from both indexes and moves the version on
      const before = await store.indexVersion('vs_1');
      expect(await store.detachFile(owner, 'vs_1', 'f1')).toBe(true);
      expect(await store.indexVersion('vs_1')).toBeGreaterThan(before);
      expect((await store.chunkTexts((await store.keywordSearch('vs_1', ['aurora'], null, 10)).map((h) => h.chunkId))).map((c) => c.fileId)).toEqual(['f2']);
    });

    it('deleting a file detaches it from every store', async () => {
      await addFile('f1');
      await addStore('vs_1');
      await addStore('vs_2');
      for (const vs of ['vs_1', 'vs_2']) await store.attachFiles(owner, vs, [{ fileId: 'f1', attributes: {}, chunking: CHUNKING, batchId: null }], 2_000);
      expect(await store.deleteFile(owner, 'f1')).toBe(true);
      expect(await store.getStoreFile(owner, 'vs_1', 'f1')).toBeUndefined();
      expect((await store.getStore(owner, 'vs_2'))!.fileCounts.total).toBe(0);
      expect(await store.claimJob('w', 10_000, 1_000)).toBeUndefined();
    });

    it('updates and deletes stores', async () => {
      await addStore('vs_1');
      const updated = await store.updateStore(owner, 'vs_1', { name: 'renamed', metadata: { a: 'b' }, expiresAfter: { anchor: 'last_active_at', days: 7 }, keywordOnlyReason: 'no embeddings' });
      expect(updated).toMatchObject({ name: 'renamed', metadata: { a: 'b' }, expiresAfter: { anchor: 'last_active_at', days: 7 }, keywordOnlyReason: 'no embeddings' });
      await addStore('vs_2');
      expect((await store.listStores(owner, { limit: 1, order: 'desc' })).data.map((s) => s.id)).toEqual(['vs_2']);
      expect(await store.deleteStore(owner, 'vs_1')).toBe(true);
      expect(await store.getStore(owner, 'vs_1')).toBeUndefined();
    });
  });
}
