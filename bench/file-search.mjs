// file_search retrieval benchmark: ingest 10,000 chunks into one vector store, then measure
// search latency (p50 / p99) for keyword, vector and hybrid retrieval, on SQLite and PostgreSQL.
// Runs in-process against the compiled `dist/` (no HTTP): it measures the retrieval store and
// the retriever, not the transport. See bench/README.md ("File search").
//
//   npm run build && node bench/file-search.mjs
//
// Knobs: BENCH_FS_CHUNKS (10000), BENCH_FS_QUERIES (300), BENCH_FS_DIMS (256, the simulator's
// embedder), BENCH_FS_BACKENDS (sqlite,sqlite-exact,postgres: SQLite with its sqlite-vec index,
// SQLite with the exact scan, PostgreSQL with pgvector when the server has it, else the exact
// scan), SWITCHYARD_TEST_POSTGRES_URL.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { SqliteFileSearchStore } from '../dist/files/sqlite-store.js';
import { PostgresFileSearchStore } from '../dist/files/postgres-store.js';
import { DEFAULT_OWNER } from '../dist/files/store.js';
import { Retriever } from '../dist/retrieval/search.js';
import { hashEmbedding } from '../dist/simulate/embeddings.js';
import { percentile, round, sorted } from './lib/stats.mjs';

const CHUNKS = Number(process.env.BENCH_FS_CHUNKS ?? 10_000);
const QUERIES = Number(process.env.BENCH_FS_QUERIES ?? 300);
const DIMS = Number(process.env.BENCH_FS_DIMS ?? 256);
const BACKENDS = (process.env.BENCH_FS_BACKENDS ?? 'sqlite,sqlite-exact,postgres').split(',').map((b) => b.trim());
const PG_URL = process.env.SWITCHYARD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RESULTS_FILE = fileURLToPath(new URL('./file-search-results.json', import.meta.url));
const FILES = 100;
const WORDS_PER_CHUNK = 120;
const VOCABULARY = 20_000;
const WARMUP = 30;

// ---- a deterministic synthetic corpus: Zipf-distributed pseudo-words (like natural text)
let seed = 42;
const random = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const syllables = ['ka', 'lo', 'mi', 'ren', 'tu', 'sa', 'vor', 'ne', 'dia', 'pel', 'qui', 'bas', 'for', 'gel', 'hun', 'jot'];
const vocabulary = Array.from({ length: VOCABULARY }, (_, i) => {
  let n = i + 1;
  let word = '';
  while (n > 0) {
    word += syllables[n % syllables.length];
    n = Math.floor(n / syllables.length);
  }
  return word;
});
const harmonic = vocabulary.reduce((sum, _, i) => sum + 1 / (i + 1), 0);
const cumulative = [];
vocabulary.reduce((acc, _, i) => (cumulative[i] = acc + 1 / (i + 1) / harmonic), 0);
function word() {
  const r = random();
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return vocabulary[lo];
}
const chunkText = () => Array.from({ length: WORDS_PER_CHUNK }, word).join(' ');
// queries: 2–5 mid-frequency words, as a question would have
const queries = Array.from({ length: QUERIES + WARMUP }, () => Array.from({ length: 2 + Math.floor(random() * 4) }, () => vocabulary[50 + Math.floor(random() * 2000)]).join(' '));

/** The simulator's hashing embedder, in-process (no HTTP in the measured path). */
const embedder = {
  model: 'hash',
  async embed(texts) {
    return texts.map((t) => Float32Array.from(hashEmbedding(t, DIMS)));
  },
};

async function openBackend(name) {
  if (name === 'sqlite' || name === 'sqlite-exact') {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-fs-bench-'));
    const store = new SqliteFileSearchStore(dir, { vectorIndex: name === 'sqlite' ? 'sqlite-vec' : 'exact' });
    return { store, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `switchyard_fs_bench_${randomBytes(4).toString('hex')}`;
  const store = await PostgresFileSearchStore.open(PG_URL, { schema, max: 4 });
  return {
    store,
    cleanup: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

async function runBackend(name) {
  const { store, cleanup } = await openBackend(name);
  try {
    const owner = DEFAULT_OWNER;
    const storeId = `vs_bench${randomBytes(6).toString('hex')}`;
    await store.insertStore({ id: storeId, owner, name: 'bench', createdAt: 0, lastActiveAt: 0, metadata: {}, expiresAfter: null, keywordOnlyReason: null });
    const chunking = { type: 'static', maxChunkSizeTokens: 800, chunkOverlapTokens: 400 };
    const perFile = Math.ceil(CHUNKS / FILES);
    // ingestion through the same path as the service: attach, claim, publish (one transaction per file)
    const ingestStart = performance.now();
    let embedMs = 0;
    for (let f = 0; f < FILES; f++) {
      const fileId = `file-bench${f}`;
      await store.insertFile({ id: fileId, owner, filename: `doc${f}.txt`, purpose: 'assistants', bytes: 1, createdAt: 0, expiresAt: null });
      await store.attachFiles(owner, storeId, [{ fileId, attributes: { shard: f % 4, title: `doc ${f}` }, chunking, batchId: null }], 0);
      const job = await store.claimJob('bench', Date.now(), 60_000);
      const texts = Array.from({ length: Math.min(perFile, CHUNKS - f * perFile) }, chunkText);
      const t = performance.now();
      const vectors = await embedder.embed(texts);
      embedMs += performance.now() - t;
      if (!(await store.publishFile(job, 'bench', texts.map((text, i) => ({ text, embedding: vectors[i] })), 1))) throw new Error('publish refused');
    }
    const ingestMs = performance.now() - ingestStart;
    const retriever = new Retriever(store, embedder);
    const base = { owner, storeIds: [storeId], maxResults: 10, scoreThreshold: 0, weights: { embedding: 1, text: 1 } };
    const modes = {};
    for (const mode of ['keyword', 'vector', 'hybrid']) {
      const times = [];
      let results = 0;
      for (let i = 0; i < queries.length; i++) {
        const t = performance.now();
        const hits = await retriever.search({ ...base, queries: [queries[i]], mode });
        const ms = performance.now() - t;
        if (i >= WARMUP) {
          times.push(ms);
          results += hits.length;
        }
      }
      const s = sorted(times);
      modes[mode] = { p50_ms: round(percentile(s, 50)), p99_ms: round(percentile(s, 99)), mean_results: round(results / times.length, 2) };
    }
    // the same hybrid search with an attribute filter (applied before ranking)
    const filtered = [];
    for (let i = 0; i < queries.length; i++) {
      const t = performance.now();
      await retriever.search({ ...base, queries: [queries[i]], filter: { type: 'eq', key: 'shard', value: 1 } });
      if (i >= WARMUP) filtered.push(performance.now() - t);
    }
    const fs = sorted(filtered);
    modes.hybrid_filtered = { p50_ms: round(percentile(fs, 50)), p99_ms: round(percentile(fs, 99)) };
    return { backend: name, vector_index: store.vectorIndex, chunks: CHUNKS, dimensions: DIMS, ingest_s: round(ingestMs / 1000, 2), ingest_chunks_per_s: Math.round(CHUNKS / (ingestMs / 1000)), embed_s: round(embedMs / 1000, 2), search: modes };
  } finally {
    await store.close();
    await cleanup();
  }
}

const results = { date: new Date().toISOString(), node: process.version, load_average_at_start: loadavg().map((x) => round(x, 1)), chunks: CHUNKS, queries: QUERIES, dimensions: DIMS, runs: [] };
for (const backend of BACKENDS) {
  try {
    results.runs.push(await runBackend(backend));
  } catch (err) {
    console.error(`${backend}: ${err.message}`);
    results.runs.push({ backend, error: err.message });
  }
}
console.log(`file_search bench: ${CHUNKS} chunks, ${QUERIES} queries, ${DIMS} dimensions`);
console.log('backend       index       ingest s  keyword p50/p99   vector p50/p99    hybrid p50/p99    hybrid+filter p50/p99   (ms)');
for (const r of results.runs) {
  if (r.error) {
    console.log(`${r.backend.padEnd(13)} error: ${r.error}`);
    continue;
  }
  const m = (x) => `${String(x.p50_ms).padStart(7)} / ${String(x.p99_ms).padEnd(8)}`;
  console.log(`${r.backend.padEnd(13)} ${r.vector_index.padEnd(10)} ${String(r.ingest_s).padStart(8)}  ${m(r.search.keyword)} ${m(r.search.vector)} ${m(r.search.hybrid)} ${m(r.search.hybrid_filtered)}`);
  const target = r.search.hybrid.p50_ms <= 5;
  console.log(`${r.backend.padEnd(13)} target hybrid p50 ≤ 5 ms at 10,000 chunks: ${target ? 'PASS' : 'MISS'}`);
}
results.load_average_at_end = loadavg().map((x) => round(x, 1));
console.log(`load average: ${results.load_average_at_start.join(' ')} at start, ${results.load_average_at_end.join(' ')} at end`);
writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
