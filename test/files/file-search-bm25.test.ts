// Keyword ranking conformance: PostgreSQL's BM25 (postings table, FTS5's formula and constants)
// ranks like SQLite FTS5's bm25() on the same corpus — same order, scores within a few percent —
// and weighs rare terms over frequent ones (which ts_rank, used before, does not).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresFileSearchStore } from '../../src/files/postgres-store.js';
import { SqliteFileSearchStore } from '../../src/files/sqlite-store.js';
import { DEFAULT_OWNER, type FileSearchStore } from '../../src/files/store.js';
import { queryTerms } from '../../src/retrieval/query-terms.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../helpers/postgres.js';

const pgUnavailable = await probePostgres(PG_URL);
const schemas: string[] = [];
afterAll(async () => {
  if (!pgUnavailable) await dropSchemas(schemas);
});

const owner = DEFAULT_OWNER;

// content words only (no stopwords): both engines then see the same chunk lengths
const CORPUS: Record<string, string[]> = {
  'file-fruit': [
    'apple apple apple orchard harvest',
    'apple banana smoothie recipe',
    'apple cider vinegar',
    'apple pie cinnamon crust',
    'apple tree pruning winter',
  ],
  'file-garden': [
    'zucchini bread',
    'apple compost garden soil',
    'apple blossom frost damage spring orchard',
    'tomato zucchini ratatouille summer garden harvest kitchen',
    'garden hose',
  ],
};

async function fill(store: FileSearchStore, storeId: string): Promise<void> {
  await store.insertStore({ id: storeId, owner, name: storeId, createdAt: 1, lastActiveAt: 1, metadata: {}, expiresAfter: null, keywordOnlyReason: null });
  for (const [fileId, texts] of Object.entries(CORPUS)) {
    await store.insertFile({ id: fileId, owner, filename: `${fileId}.txt`, purpose: 'assistants', bytes: 1, createdAt: 1, expiresAt: null });
    await store.attachFiles(owner, storeId, [{ fileId, attributes: {}, chunking: { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 }, batchId: null }], 1);
    const job = await store.claimJob('w', Date.now(), 30_000);
    expect(await store.publishFile(job!, 'w', texts.map((text) => ({ text })), 1)).toBe(true);
  }
}

async function ranked(store: FileSearchStore, storeId: string, query: string, fileIds: string[] | null = null): Promise<Array<{ text: string; score: number }>> {
  const hits = await store.keywordSearch(storeId, queryTerms(query), fileIds, 20);
  const texts = new Map((await store.chunkTexts(hits.map((h) => h.chunkId))).map((c) => [c.chunkId, c.text]));
  return hits.map((h) => ({ text: texts.get(h.chunkId)!, score: h.score }));
}

describe('keyword ranking: PostgreSQL BM25 against SQLite FTS5', () => {
  if (pgUnavailable) {
    postgresAbsent(pgUnavailable);
    return;
  }

  it('ranks the same chunks in the same order with scores within 5 %, filters by file before ranking, follows detaches', async () => {
    const schema = `switchyard_bm25_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const postgres = await PostgresFileSearchStore.open(PG_URL, { schema, max: 2 });
    const sqlite = new SqliteFileSearchStore(':memory:', { vectorIndex: 'exact' });
    try {
      await fill(postgres, 'vs_1');
      await fill(sqlite, 'vs_1');
      for (const query of ['apple zucchini', 'apple orchard harvest', 'garden harvest summer', 'What damage does frost do to a blossom?', 'pruning', 'cinnamon apple pie crust']) {
        const a = await ranked(sqlite, 'vs_1', query);
        const b = await ranked(postgres, 'vs_1', query);
        expect(b.map((h) => h.text), query).toEqual(a.map((h) => h.text));
        for (let i = 0; i < a.length; i++) expect(Math.abs(b[i].score - a[i].score) / a[i].score, `${query} #${i}`).toBeLessThan(0.05);
      }
      const filtered = await ranked(postgres, 'vs_1', 'apple harvest', ['file-garden']);
      expect(filtered.map((h) => h.text)).toEqual((await ranked(sqlite, 'vs_1', 'apple harvest', ['file-garden'])).map((h) => h.text));
      expect(filtered.every((h) => CORPUS['file-garden'].includes(h.text))).toBe(true);

      // counts follow a detach: the rare term's weight changes with N, in both engines alike
      await postgres.detachFile(owner, 'vs_1', 'file-fruit');
      await sqlite.detachFile(owner, 'vs_1', 'file-fruit');
      const a = await ranked(sqlite, 'vs_1', 'garden zucchini apple');
      const b = await ranked(postgres, 'vs_1', 'garden zucchini apple');
      expect(b.map((h) => h.text)).toEqual(a.map((h) => h.text));
      for (let i = 0; i < a.length; i++) expect(Math.abs(b[i].score - a[i].score) / a[i].score).toBeLessThan(0.05);
    } finally {
      await postgres.close();
      await sqlite.close();
    }
  });

  it('weighs a rare term over a frequent one repeated (BM25 idf; ts_rank would put the triple "apple" first)', async () => {
    const schema = `switchyard_bm25_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const postgres = await PostgresFileSearchStore.open(PG_URL, { schema, max: 2 });
    try {
      await fill(postgres, 'vs_2');
      const hits = await ranked(postgres, 'vs_2', 'apple zucchini');
      expect(hits[0].text).toBe('zucchini bread');
      expect(hits.findIndex((h) => h.text === 'apple apple apple orchard harvest')).toBeGreaterThan(1);
    } finally {
      await postgres.close();
    }
  });

  it('indexes chunks written before the postings existed when the schema is migrated', async () => {
    const schema = `switchyard_bm25_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const first = await PostgresFileSearchStore.open(PG_URL, { schema, max: 2 });
    await fill(first, 'vs_3');
    const expected = await ranked(first, 'vs_3', 'apple zucchini');
    // as an older gateway left it: no postings, no lengths, no counts
    await first.pool.query(`DELETE FROM "${schema}".fs_postings; UPDATE "${schema}".fs_chunks SET doc_len = NULL; UPDATE "${schema}".fs_vector_stores SET chunk_count = 0, token_count = 0`);
    expect(await ranked(first, 'vs_3', 'apple zucchini')).toEqual([]);
    await first.close();
    const reopened = await PostgresFileSearchStore.open(PG_URL, { schema, max: 2 });
    expect(await ranked(reopened, 'vs_3', 'apple zucchini')).toEqual(expected);
    await reopened.close();
  });
});
