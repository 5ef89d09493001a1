// Expired files and vector stores are deleted by the sweeper, in bounded batches, on SQLite (a data
// folder) and on PostgreSQL (a fresh schema): metadata, attachments, chunks and the blob on disk.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/files/blobs.js';
import { PostgresFileSearchStore } from '../../src/files/postgres-store.js';
import { SqliteFileSearchStore } from '../../src/files/sqlite-store.js';
import { DEFAULT_OWNER, type FileSearchStore } from '../../src/files/store.js';
import { ExpirySweeper } from '../../src/retrieval/expiry-sweeper.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const schemas: string[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!pgUnavailable) await dropSchemas(schemas);
});

const owner = DEFAULT_OWNER;
const DAY = 86_400;
const NOW = 2_000_000_000;
const log = pino({ level: 'silent' });

const backends: Array<[string, (dir: string) => Promise<FileSearchStore>]> = [
  ['SQLite', async (dir) => new SqliteFileSearchStore(dir)],
  [
    'PostgreSQL',
    async () => {
      const schema = `switchyard_fsx_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return PostgresFileSearchStore.open(PG_URL, { schema, max: 3 });
    },
  ],
];

for (const [name, open] of backends) {
  describe(`expiry sweeper: ${name}`, () => {
    if (name === 'PostgreSQL' && pgUnavailable) {
      postgresAbsent(pgUnavailable);
      return;
    }
    let store: FileSearchStore;
    let blobs: BlobStore;
    beforeEach(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-fsx-'));
      dirs.push(dir);
      store = await open(dir);
      blobs = new BlobStore(join(dir, 'files'));
    });
    afterEach(async () => {
      await store.close();
    });

    const addFile = async (id: string, expiresAt: number | null) => {
      await blobs.write(id, Readable.from([Buffer.from(`bytes of ${id}`)]), 1_000);
      await store.insertFile({ id, owner, filename: `${id}.txt`, purpose: 'assistants', bytes: 10, createdAt: NOW - DAY, expiresAt });
    };
    const addStore = (id: string, lastActiveAt: number, days: number | null) =>
      store.insertStore({ id, owner, name: id, createdAt: lastActiveAt, lastActiveAt, metadata: {}, expiresAfter: days === null ? null : { anchor: 'last_active_at', days }, keywordOnlyReason: null });
    const sweeper = (batchSize = 100, maxBatches?: number) => new ExpirySweeper({ store, blobs, log, intervalMs: 60_000, batchSize, maxBatches, now: () => NOW });

    it('deletes files whose expires_at has passed (metadata, attachments, chunks, blob) and keeps the rest', async () => {
      await addFile('file-old', NOW - 1);
      await addFile('file-now', NOW);
      await addFile('file-later', NOW + 3600);
      await addFile('file-forever', null);
      await addStore('vs_keep', NOW, null);
      await store.attachFiles(owner, 'vs_keep', [{ fileId: 'file-old', attributes: {}, chunking: { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 }, batchId: null }], NOW);
      const job = await store.claimJob('w', Date.now(), 30_000);
      expect(job?.fileId).toBe('file-old');
      expect(await store.publishFile(job!, 'w', [{ text: 'the old file talks about glaciers' }], 10)).toBe(true);
      expect((await store.keywordSearch('vs_keep', ['glaciers'], null, 5)).length).toBe(1);

      expect(await sweeper().sweep()).toEqual({ files: 2, stores: 0 });

      expect(await store.getFile(owner, 'file-old')).toBeUndefined();
      expect(await store.getFile(owner, 'file-now')).toBeUndefined();
      expect(await store.getFile(owner, 'file-later')).toBeDefined();
      expect(await store.getFile(owner, 'file-forever')).toBeDefined();
      expect(existsSync(join(blobs.dir, 'file-old'))).toBe(false);
      expect(existsSync(join(blobs.dir, 'file-now'))).toBe(false);
      expect(existsSync(join(blobs.dir, 'file-later'))).toBe(true);
      // detached from the store it was in, its chunks gone from the index
      expect(await store.getStoreFile(owner, 'vs_keep', 'file-old')).toBeUndefined();
      expect(await store.keywordSearch('vs_keep', ['glaciers'], null, 5)).toEqual([]);
      expect((await store.getStore(owner, 'vs_keep'))?.fileCounts.total).toBe(0);
      // a second sweep finds nothing more
      expect(await sweeper().sweep()).toEqual({ files: 0, stores: 0 });
    });

    it('deletes vector stores idle past expires_after (their files stay), keeps active and non-expiring ones', async () => {
      await addFile('file-shared', null);
      await addStore('vs_idle', NOW - 8 * DAY, 7);
      await addStore('vs_edge', NOW - 7 * DAY, 7);
      await addStore('vs_recent', NOW - 6 * DAY, 7);
      await addStore('vs_forever', NOW - 400 * DAY, null);
      await store.attachFiles(owner, 'vs_idle', [{ fileId: 'file-shared', attributes: {}, chunking: { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 }, batchId: null }], NOW - 8 * DAY);
      const job = await store.claimJob('w', Date.now(), 30_000);
      await store.publishFile(job!, 'w', [{ text: 'aurora borealis' }], 10);
      // attaching touched last_active_at: idle again by setting it back
      await store.updateStore(owner, 'vs_idle', { lastActiveAt: NOW - 8 * DAY });

      expect(await sweeper().sweep()).toEqual({ files: 0, stores: 2 });

      expect(await store.getStore(owner, 'vs_idle')).toBeUndefined();
      expect(await store.getStore(owner, 'vs_edge')).toBeUndefined();
      expect(await store.getStore(owner, 'vs_recent')).toBeDefined();
      expect(await store.getStore(owner, 'vs_forever')).toBeDefined();
      expect(await store.keywordSearch('vs_idle', ['aurora'], null, 5)).toEqual([]);
      expect(await store.loadVectors('vs_idle')).toMatchObject({ fileIds: [] });
      expect(await store.getFile(owner, 'file-shared')).toBeDefined();
      expect(existsSync(join(blobs.dir, 'file-shared'))).toBe(true);
    });

    it('works through a backlog in bounded batches: at most batchSize × maxBatches per sweep', async () => {
      for (let i = 0; i < 25; i++) await addFile(`file-x${String(i).padStart(2, '0')}`, NOW - 100 + i);
      const bounded = sweeper(10, 2);
      expect(await bounded.sweep()).toEqual({ files: 20, stores: 0 });
      expect((await store.listFiles(owner, { limit: 100, order: 'asc' })).data.map((f) => f.id)).toEqual(['file-x20', 'file-x21', 'file-x22', 'file-x23', 'file-x24']);
      expect(await bounded.sweep()).toEqual({ files: 5, stores: 0 });
      expect((await store.listFiles(owner, { limit: 100, order: 'asc' })).data).toEqual([]);
    });

    it('sweeps by itself on its interval once started, and stops on close', async () => {
      await addFile('file-tick', NOW - 1);
      const ticking = new ExpirySweeper({ store, blobs, log, intervalMs: 20, batchSize: 10, now: () => NOW });
      ticking.start();
      for (let i = 0; i < 100 && (await store.getFile(owner, 'file-tick')); i++) await new Promise((r) => setTimeout(r, 10));
      await ticking.close();
      expect(await store.getFile(owner, 'file-tick')).toBeUndefined();
      await addFile('file-after-close', NOW - 1);
      await new Promise((r) => setTimeout(r, 80));
      expect(await store.getFile(owner, 'file-after-close')).toBeDefined();
    });
  });
}
