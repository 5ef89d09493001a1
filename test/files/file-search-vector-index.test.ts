// The file_search vector index: sqlite-vec on SQLite (vec0 partitioned by store, file filter inside
// the KNN query) gives the same neighbours as the exact scan; it is kept in step with publish /
// detach / store deletion, rebuilt from the stored float32 vectors when it missed changes, and
// replaced by the exact scan (said why) where the extension cannot load. On PostgreSQL, pgvector
// is used when the server has it; where not (this machine), `auto` falls back to the exact scan
// with the reason, and `pgvector` refuses to start.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresFileSearchStore } from '../../src/files/postgres-store.js';
import { SqliteFileSearchStore } from '../../src/files/sqlite-store.js';
import { DEFAULT_OWNER, type ChunkingStrategy, type FileSearchStore } from '../../src/files/store.js';
import { normalize } from '../../src/retrieval/embedder.js';
import { nearest, Retriever } from '../../src/retrieval/search.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const dirs: string[] = [];
const schemas: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!pgUnavailable) await dropSchemas(schemas);
});

const owner = DEFAULT_OWNER;
const CHUNKING: ChunkingStrategy = { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 };
const DIMS = 32;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-vec-'));
  dirs.push(dir);
  return dir;
}

/** A seeded pseudo-random unit vector (mulberry32), so both stores get the same data. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const randomVector = (next: () => number) => normalize(Float32Array.from({ length: DIMS }, () => next() * 2 - 1));

/** Two stores × four files × 25 chunks of seeded vectors (and words, for the keyword side). */
async function fill(store: FileSearchStore): Promise<void> {
  const next = seeded(7);
  for (const storeId of ['vs_a', 'vs_b']) {
    await store.insertStore({ id: storeId, owner, name: storeId, createdAt: 1, lastActiveAt: 1, metadata: {}, expiresAfter: null, keywordOnlyReason: null });
    for (let f = 0; f < 4; f++) {
      const fileId = `${storeId}-file${f}`;
      await store.insertFile({ id: fileId, owner, filename: `${fileId}.txt`, purpose: 'assistants', bytes: 1, createdAt: 1, expiresAt: null });
      await store.attachFiles(owner, storeId, [{ fileId, attributes: { n: f }, chunking: CHUNKING, batchId: null }], 1);
      const job = await store.claimJob('w', Date.now(), 30_000);
      const chunks = Array.from({ length: 25 }, (_, i) => ({ text: `chunk ${i} of ${fileId} word${i % 7} topic${f}`, embedding: randomVector(next) }));
      expect(await store.publishFile(job!, 'w', chunks, 1)).toBe(true);
    }
  }
}

describe('sqlite-vec index', () => {
  it('loads from the npm package and answers the same neighbours as the exact scan (store partition, file filter inside the query)', async () => {
    const indexed = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'sqlite-vec' });
    const exact = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'exact' });
    expect(indexed.vectorIndex).toBe('sqlite-vec');
    expect(indexed.vectorIndexVersion).toMatch(/^v0\.1\./);
    expect(exact.vectorIndex).toBe('exact');
    await fill(indexed);
    await fill(exact);
    const queries = seeded(99);
    for (let i = 0; i < 10; i++) {
      const query = randomVector(queries);
      for (const storeId of ['vs_a', 'vs_b']) {
        for (const files of [null, [`${storeId}-file1`, `${storeId}-file3`]]) {
          const fromIndex = await indexed.vectorSearch(storeId, query, files, 20);
          const fromScan = nearest(await exact.loadVectors(storeId), query, files && new Set(files), 20);
          expect(fromIndex.map((h) => [h.chunkId, h.fileId])).toEqual(fromScan.map((h) => [h.chunkId, h.fileId]));
          for (let k = 0; k < fromIndex.length; k++) expect(fromIndex[k].similarity).toBeCloseTo(fromScan[k].similarity, 5);
          // the partition: never a chunk of the other store; the filter: only allowed files
          for (const hit of fromIndex) {
            expect(hit.fileId.startsWith(storeId)).toBe(true);
            if (files) expect(files).toContain(hit.fileId);
          }
        }
      }
    }
    await indexed.close();
    await exact.close();
  });

  it('gives the retriever the same hybrid results as the exact scan', async () => {
    const indexed = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'sqlite-vec' });
    const exact = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'exact' });
    await fill(indexed);
    await fill(exact);
    const queryVector = randomVector(seeded(5));
    const embedder = { model: 'fixed', embed: async (texts: string[]) => texts.map(() => queryVector) };
    const request = { owner, storeIds: ['vs_a', 'vs_b'], queries: ['word3 topic2'], maxResults: 15, scoreThreshold: 0, weights: { embedding: 1, text: 1 }, filter: { type: 'gte' as const, key: 'n', value: 1 } };
    const a = await new Retriever(indexed, embedder).search(request);
    const b = await new Retriever(exact, embedder).search(request);
    expect(a.length).toBe(15);
    expect(a).toEqual(b);
    const vectorOnly = await new Retriever(indexed, embedder).search({ ...request, mode: 'vector' });
    expect(vectorOnly).toEqual(await new Retriever(exact, embedder).search({ ...request, mode: 'vector' }));
    await indexed.close();
    await exact.close();
  });

  it('follows detaches and store deletion in the same transactions', async () => {
    const store = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'sqlite-vec' });
    await fill(store);
    const query = randomVector(seeded(3));
    expect((await store.vectorSearch('vs_a', query, null, 200)).some((h) => h.fileId === 'vs_a-file2')).toBe(true);
    await store.detachFile(owner, 'vs_a', 'vs_a-file2');
    const after = await store.vectorSearch('vs_a', query, null, 200);
    expect(after.some((h) => h.fileId === 'vs_a-file2')).toBe(false);
    expect(after.length).toBeGreaterThan(0);
    await store.deleteStore(owner, 'vs_a');
    expect(await store.vectorSearch('vs_a', query, null, 200)).toEqual([]);
    expect((await store.vectorSearch('vs_b', query, null, 200)).length).toBeGreaterThan(0);
    await store.close();
  });

  it('is rebuilt from the stored float32 vectors when the database was written without it', async () => {
    const dir = tempDir();
    const exact = new SqliteFileSearchStore(dir, { vectorIndex: 'exact' });
    await fill(exact);
    const query = randomVector(seeded(11));
    const expected = nearest(await exact.loadVectors('vs_b'), query, null, 10);
    await exact.close();

    const reopened = new SqliteFileSearchStore(dir, { vectorIndex: 'auto' });
    expect(reopened.vectorIndex).toBe('sqlite-vec');
    expect(reopened.vectorIndexRebuilt).toBe(200);
    expect((await reopened.vectorSearch('vs_b', query, null, 10)).map((h) => h.chunkId)).toEqual(expected.map((h) => h.chunkId));
    // a change while the index is in use keeps it current: the next open rebuilds nothing
    await reopened.detachFile(owner, 'vs_b', 'vs_b-file0');
    await reopened.close();
    const again = new SqliteFileSearchStore(dir, { vectorIndex: 'auto' });
    expect(again.vectorIndexRebuilt).toBe(0);
    expect((await again.vectorSearch('vs_b', query, null, 100)).some((h) => h.fileId === 'vs_b-file0')).toBe(false);
    // a detach made in exact mode is caught by the generation check too
    await again.close();
    const exactAgain = new SqliteFileSearchStore(dir, { vectorIndex: 'exact' });
    await exactAgain.detachFile(owner, 'vs_b', 'vs_b-file1');
    await exactAgain.close();
    const last = new SqliteFileSearchStore(dir, { vectorIndex: 'auto' });
    expect(last.vectorIndexRebuilt).toBe(150);
    expect((await last.vectorSearch('vs_b', query, null, 100)).some((h) => h.fileId === 'vs_b-file1')).toBe(false);
    await last.close();
  });

  it('falls back to the exact scan (saying why) where the extension cannot load, and refuses to start when it is required', async () => {
    const missing = join(tempDir(), 'no-such-vec0.so');
    const store = new SqliteFileSearchStore(tempDir(), { vectorIndex: 'auto', extensionPath: missing });
    expect(store.vectorIndex).toBe('exact');
    expect(store.vectorIndexFallback).toMatch(/sqlite-vec cannot be loaded/);
    await fill(store);
    // the retriever scans the stored vectors itself
    const queryVector = randomVector(seeded(5));
    const hits = await new Retriever(store, { model: 'fixed', embed: async (t: string[]) => t.map(() => queryVector) }).search({ owner, storeIds: ['vs_a'], queries: ['x'], maxResults: 5, scoreThreshold: 0, weights: { embedding: 1, text: 1 }, mode: 'vector' });
    expect(hits.length).toBe(5);
    await store.close();
    expect(() => new SqliteFileSearchStore(tempDir(), { vectorIndex: 'sqlite-vec', extensionPath: missing })).toThrow(/sqlite-vec cannot be loaded/);
  });
});

describe('pgvector on PostgreSQL', () => {
  if (pgUnavailable) {
    postgresAbsent(pgUnavailable);
    return;
  }
  const schema = () => {
    const name = `switchyard_vec_${randomBytes(5).toString('hex')}`;
    schemas.push(name);
    return name;
  };

  it('uses pgvector when the server has it, else falls back to the exact scan with the reason', async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const available = (await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).rowCount === 1;
    await client.end();
    const store = await PostgresFileSearchStore.open(PG_URL, { schema: schema(), max: 3, vectorIndex: 'auto' });
    await fill(store);
    const query = randomVector(seeded(21));
    const exact = nearest(await store.loadVectors('vs_a'), query, new Set(['vs_a-file0', 'vs_a-file2']), 10);
    if (available) {
      expect(store.vectorIndex).toBe('pgvector');
      const hits = await store.vectorSearch('vs_a', query, ['vs_a-file0', 'vs_a-file2'], 10);
      // HNSW is approximate: most of the exact neighbours, never a chunk outside the filter
      expect(hits.filter((h) => exact.some((e) => e.chunkId === h.chunkId)).length).toBeGreaterThanOrEqual(8);
      for (const h of hits) expect(['vs_a-file0', 'vs_a-file2']).toContain(h.fileId);
    } else {
      expect(store.vectorIndex).toBe('exact');
      expect(store.vectorIndexFallback).toMatch(/pgvector is not available on this server/);
      await expect(store.vectorSearch('vs_a', query, null, 10)).rejects.toThrow(/pgvector is not in use/);
      // the retriever's exact scan still serves vector search
      const hits = await new Retriever(store, { model: 'fixed', embed: async (t: string[]) => t.map(() => query) }).search({ owner, storeIds: ['vs_a'], queries: ['x'], maxResults: 10, scoreThreshold: 0, weights: { embedding: 1, text: 1 }, mode: 'vector', filter: { type: 'in', key: 'n', value: [0, 2] } });
      expect(hits.map((h) => h.fileId).sort()).toEqual(exact.map((e) => e.fileId).sort());
    }
    await store.close();
  });

  it("refuses to start with vectorIndex 'pgvector' when the extension cannot be created", async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const available = (await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).rowCount === 1;
    await client.end();
    if (available) return; // nothing to refuse on a server that has pgvector
    await expect(PostgresFileSearchStore.open(PG_URL, { schema: schema(), max: 2, vectorIndex: 'pgvector' })).rejects.toThrow(/'pgvector' but the extension cannot be used/);
  });
});
