import type { Attributes, FileSearchStore, StoredVectors } from '../files/store.js';
import { EmbeddingsUnsupportedError, type Embedder } from './embedder.js';
import { matchesFilter, type AttributeFilter } from './filters.js';
import { queryTerms } from './query-terms.js';

/** Reciprocal rank fusion's constant (Cormack et al.): rank r contributes weight / (K + r). */
const RRF_K = 60;
/** Candidates taken from each side (keyword, vector) before fusion. */
const MIN_CANDIDATES = 50;
/** Stores whose vectors stay cached in memory (keyed by their index version). */
const CACHED_STORES = 32;

export type SearchMode = 'hybrid' | 'keyword' | 'vector';

export interface SearchRequest {
  owner: string;
  storeIds: string[];
  queries: string[];
  filter?: AttributeFilter;
  maxResults: number;
  scoreThreshold: number;
  /** `ranking_options.hybrid_search` weights. */
  weights: { embedding: number; text: number };
  /** Forces one side (benchmarks); hybrid by default, keyword-only without an embedder. */
  mode?: SearchMode;
}

export interface SearchHit {
  storeId: string;
  fileId: string;
  filename: string;
  score: number;
  text: string;
  attributes: Attributes;
}

/**
 * Hybrid retrieval over one or more vector stores.
 *
 * 1. The attribute filter is applied first, to the files: only chunks of matching files are
 *    ranked at all (never "search, then drop what does not match").
 * 2. Keyword side: the store's full-text index (FTS5 bm25 / PostgreSQL BM25) with sanitised terms.
 *    Vector side: the database's vector index (sqlite-vec, pgvector HNSW) when the store has one,
 *    else an exact cosine scan of the stored float32 vectors (cached per index version).
 * 3. Weighted reciprocal rank fusion. The score is the fused value divided by its maximum
 *    (first on every active side), so it lies in 0–1: 1 = ranked first by keyword and vector
 *    search alike; `score_threshold` cuts on that.
 * Several queries (the tool's `queries`) are searched separately; a chunk keeps its best score.
 */
export class Retriever {
  private readonly vectorCache = new Map<string, { version: number; vectors: StoredVectors }>();
  private embedderUnavailable: string | null = null;

  constructor(
    private readonly store: FileSearchStore,
    private readonly embedder: Embedder | null,
  ) {}

  /** Why vector search is off (no embedder, or it said it cannot embed), or null. */
  get keywordOnlyReason(): string | null {
    return this.embedder ? this.embedderUnavailable : 'no embedding model is configured';
  }

  async search(request: SearchRequest, signal?: AbortSignal): Promise<SearchHit[]> {
    const best = new Map<number, { score: number; storeId: string; fileId: string }>();
    const candidates = Math.max(MIN_CANDIDATES, request.maxResults * 4);
    const queries = request.queries.map((q) => q.trim()).filter((q) => q.length > 0);
    const queryVectors = await this.embedQueries(queries, request.mode, signal);
    const attributesByFile = new Map<string, Attributes>();

    for (const storeId of request.storeIds) {
      // a store that does not exist (or is not this tenant's) is an error, never "no results"
      if ((await this.store.getStore(request.owner, storeId)) === undefined) throw new Error(`vector store '${storeId}' not found`);
      const files = await this.store.storeFileAttributes(request.owner, storeId);
      const allowed = request.filter ? files.filter((f) => matchesFilter(request.filter!, f.attributes)) : files;
      if (allowed.length === 0) continue;
      for (const f of allowed) attributesByFile.set(`${storeId}\u0000${f.fileId}`, f.attributes);
      const allowedIds = request.filter ? allowed.map((f) => f.fileId) : null;
      const allowedSet = allowedIds ? new Set(allowedIds) : null;
      // the database's index when there is one; else the stored vectors, scanned here
      const indexed = this.store.vectorIndex !== 'exact';
      const vectors = queryVectors && !indexed ? await this.vectors(storeId) : undefined;

      for (let q = 0; q < queries.length; q++) {
        const useKeyword = request.mode !== 'vector';
        const useVector = request.mode !== 'keyword' && queryVectors !== null && (indexed || (vectors !== undefined && vectors.fileIds.length > 0));
        // the keyword query runs in the database while the vector search runs (here or there)
        const keywordPending = useKeyword ? this.store.keywordSearch(storeId, queryTerms(queries[q]), allowedIds, candidates) : Promise.resolve([]);
        const vectorRanks = !useVector ? [] : indexed ? await this.store.vectorSearch(storeId, queryVectors![q], allowedIds, candidates) : nearest(vectors!, queryVectors![q], allowedSet, candidates);
        const keywordRanks = await keywordPending;
        const wText = useKeyword ? request.weights.text : 0;
        const wEmbed = useVector ? request.weights.embedding : 0;
        const max = (wText + wEmbed) / (RRF_K + 1);
        if (max === 0) continue;
        const fused = new Map<number, { score: number; fileId: string }>();
        keywordRanks.forEach((hit, rank) => fused.set(hit.chunkId, { score: wText / (RRF_K + rank + 1), fileId: '' }));
        vectorRanks.forEach((hit, rank) => {
          const entry = fused.get(hit.chunkId) ?? { score: 0, fileId: '' };
          entry.score += wEmbed / (RRF_K + rank + 1);
          entry.fileId = hit.fileId;
          fused.set(hit.chunkId, entry);
        });
        for (const [chunkId, entry] of fused) {
          const score = Math.min(1, entry.score / max);
          const known = best.get(chunkId);
          if (!known || known.score < score) best.set(chunkId, { score, storeId, fileId: entry.fileId });
        }
      }
    }

    const ranked = [...best.entries()].filter(([, hit]) => hit.score >= request.scoreThreshold).sort((a, b) => b[1].score - a[1].score || a[0] - b[0]).slice(0, request.maxResults);
    if (ranked.length === 0) return [];
    const texts = new Map((await this.store.chunkTexts(ranked.map(([id]) => id))).map((c) => [c.chunkId, c]));
    const filenames = new Map<string, string>();
    const hits: SearchHit[] = [];
    for (const [chunkId, hit] of ranked) {
      const chunk = texts.get(chunkId);
      if (!chunk) continue; // deleted meanwhile
      let filename = filenames.get(chunk.fileId);
      if (filename === undefined) {
        filename = (await this.store.getFile(request.owner, chunk.fileId))?.filename ?? chunk.fileId;
        filenames.set(chunk.fileId, filename);
      }
      hits.push({ storeId: hit.storeId, fileId: chunk.fileId, filename, score: round(hit.score), text: chunk.text, attributes: attributesByFile.get(`${hit.storeId}\u0000${chunk.fileId}`) ?? {} });
    }
    return hits;
  }

  /** Query vectors, or null when the search is keyword-only. */
  private async embedQueries(queries: string[], mode: SearchMode | undefined, signal?: AbortSignal): Promise<Float32Array[] | null> {
    if (mode === 'keyword' || !this.embedder || this.embedderUnavailable !== null || queries.length === 0) return null;
    try {
      return await this.embedder.embed(queries, signal);
    } catch (err) {
      if (err instanceof EmbeddingsUnsupportedError) {
        this.embedderUnavailable = err.message;
        return null;
      }
      throw err;
    }
  }

  private async vectors(storeId: string): Promise<StoredVectors> {
    const version = await this.store.indexVersion(storeId);
    const cached = this.vectorCache.get(storeId);
    if (cached && cached.version === version) return cached.vectors;
    const vectors = await this.store.loadVectors(storeId);
    this.vectorCache.delete(storeId);
    if (this.vectorCache.size >= CACHED_STORES) this.vectorCache.delete(this.vectorCache.keys().next().value!);
    this.vectorCache.set(storeId, { version, vectors });
    return vectors;
  }
}

/**
 * The exact scan: the `limit` chunks with the highest cosine similarity (> 0) among allowed files.
 * One pass over the matrix (dot products unrolled by four) keeping a small sorted top list:
 * after the first rows few candidates beat the list's floor, so it costs little beyond the pass.
 */
export function nearest(vectors: StoredVectors, query: Float32Array, allowed: Set<string> | null, limit: number): Array<{ chunkId: number; fileId: string; similarity: number }> {
  const { matrix, dimensions, chunkIds, fileIds } = vectors;
  if (query.length !== dimensions || limit < 1) return [];
  const topScore = new Float64Array(limit);
  const topRow = new Int32Array(limit);
  let size = 0;
  let floor = 0;
  const tail = dimensions - (dimensions % 4);
  for (let row = 0; row < fileIds.length; row++) {
    if (allowed !== null && !allowed.has(fileIds[row])) continue;
    const base = row * dimensions;
    let a = 0;
    let b = 0;
    let c = 0;
    let e = 0;
    for (let d = 0; d < tail; d += 4) {
      a += matrix[base + d] * query[d];
      b += matrix[base + d + 1] * query[d + 1];
      c += matrix[base + d + 2] * query[d + 2];
      e += matrix[base + d + 3] * query[d + 3];
    }
    let dot = a + b + c + e;
    for (let d = tail; d < dimensions; d++) dot += matrix[base + d] * query[d];
    if (dot <= floor) continue;
    // insert into the sorted (descending) top list, dropping its last entry when full
    let at = size < limit ? size++ : limit - 1;
    while (at > 0 && topScore[at - 1] < dot) {
      topScore[at] = topScore[at - 1];
      topRow[at] = topRow[at - 1];
      at--;
    }
    topScore[at] = dot;
    topRow[at] = row;
    if (size === limit) floor = topScore[limit - 1];
  }
  const out: Array<{ chunkId: number; fileId: string; similarity: number }> = [];
  for (let i = 0; i < size; i++) out.push({ chunkId: chunkIds[topRow[i]], fileId: fileIds[topRow[i]], similarity: topScore[i] });
  return out;
}

function round(score: number): number {
  return Math.round(score * 1e6) / 1e6;
}
