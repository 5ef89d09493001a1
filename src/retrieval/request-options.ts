import { invalidRequest } from '../errors.js';
import type { Attributes, ChunkingStrategy, ExpiresAfter } from '../files/store.js';
import { AUTO_CHUNKING, chunkingProblem } from './chunking-strategy.js';
import { parseFilter, type AttributeFilter } from './filters.js';

/**
 * Validation of the request fields shared by the Vector Stores API and the file_search tool.
 * Errors are OpenAI-shaped 400s whose `param` names the field (prefixed by `param`).
 */

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `auto` (or absent) → 800/400; `static` → validated sizes. */
export function parseChunkingStrategy(raw: unknown, param = 'chunking_strategy'): ChunkingStrategy {
  if (raw === undefined || raw === null) return AUTO_CHUNKING;
  if (!isObject(raw)) throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
  if (raw.type === 'auto') return AUTO_CHUNKING;
  if (raw.type !== 'static') throw invalidRequest(`Invalid '${param}.type': expected 'auto' or 'static'.`, `${param}.type`);
  const sizes = raw.static;
  if (!isObject(sizes)) throw invalidRequest(`Missing required parameter: '${param}.static'.`, `${param}.static`, 'missing_required_parameter');
  const max = sizes.max_chunk_size_tokens;
  const overlap = sizes.chunk_overlap_tokens;
  const problem = chunkingProblem(max as number, overlap as number);
  if (problem) throw invalidRequest(`Invalid '${param}.static': ${problem}.`, `${param}.static`);
  return { type: 'static', maxChunkSizeTokens: max as number, chunkOverlapTokens: overlap as number };
}

/** The public form of a strategy (`{type:'static', static:{…}}`). */
export function chunkingObject(strategy: ChunkingStrategy): Record<string, unknown> {
  return { type: 'static', static: { max_chunk_size_tokens: strategy.maxChunkSizeTokens, chunk_overlap_tokens: strategy.chunkOverlapTokens } };
}

/** File attributes: at most 16 keys (≤ 64 characters), values strings (≤ 512), numbers or booleans. */
export function parseAttributes(raw: unknown, param = 'attributes'): Attributes {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
  const entries = Object.entries(raw);
  if (entries.length > 16) throw invalidRequest(`Invalid '${param}': at most 16 key-value pairs.`, param);
  for (const [key, value] of entries) {
    if (key.length > 64) throw invalidRequest(`Invalid '${param}': key '${key.slice(0, 20)}…' is longer than 64 characters.`, `${param}.${key}`);
    const ok = (typeof value === 'string' && value.length <= 512) || (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean';
    if (!ok) throw invalidRequest(`Invalid '${param}.${key}': values must be strings (at most 512 characters), numbers or booleans.`, `${param}.${key}`);
  }
  return raw as Attributes;
}

/** `expires_after: {anchor: 'last_active_at', days: 1–365}` (null clears it). */
export function parseExpiresAfter(raw: unknown, param = 'expires_after'): ExpiresAfter | null {
  if (raw === undefined || raw === null) return null;
  if (!isObject(raw)) throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
  if (raw.anchor !== 'last_active_at') throw invalidRequest(`Invalid '${param}.anchor': expected 'last_active_at'.`, `${param}.anchor`);
  const days = raw.days;
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > 365) throw invalidRequest(`Invalid '${param}.days': expected an integer from 1 to 365.`, `${param}.days`);
  return { anchor: 'last_active_at', days };
}

export interface SearchOptions {
  maxResults: number;
  scoreThreshold: number;
  weights: { embedding: number; text: number };
  filter?: AttributeFilter;
}

/** `max_num_results` (1–50), `ranking_options` and `filters` of a search request or a file_search tool. */
export function parseSearchOptions(body: Record<string, unknown>, param: string | null, defaultMax: number): SearchOptions {
  const at = (key: string) => (param ? `${param}.${key}` : key);
  const max = body.max_num_results ?? defaultMax;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 50) throw invalidRequest(`Invalid '${at('max_num_results')}': expected an integer from 1 to 50.`, at('max_num_results'));
  let scoreThreshold = 0;
  const weights = { embedding: 1, text: 1 };
  const ranking = body.ranking_options;
  if (ranking !== undefined && ranking !== null) {
    if (!isObject(ranking)) throw invalidRequest(`Invalid type for '${at('ranking_options')}': expected an object.`, at('ranking_options'), 'invalid_type');
    if (ranking.ranker !== undefined && ranking.ranker !== null && !['auto', 'default-2024-11-15', 'default_2024_08_21', 'none'].includes(ranking.ranker as string)) {
      throw invalidRequest(`Invalid '${at('ranking_options.ranker')}': expected 'auto' or 'default-2024-11-15'.`, at('ranking_options.ranker'));
    }
    const threshold = ranking.score_threshold;
    if (threshold !== undefined && threshold !== null) {
      if (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1)) throw invalidRequest(`Invalid '${at('ranking_options.score_threshold')}': expected a number from 0 to 1.`, at('ranking_options.score_threshold'));
      scoreThreshold = threshold;
    }
    const hybrid = ranking.hybrid_search;
    if (hybrid !== undefined && hybrid !== null) {
      if (!isObject(hybrid)) throw invalidRequest(`Invalid type for '${at('ranking_options.hybrid_search')}': expected an object.`, at('ranking_options.hybrid_search'), 'invalid_type');
      for (const [key, target] of [['embedding_weight', 'embedding'], ['text_weight', 'text']] as const) {
        const w = hybrid[key];
        if (w === undefined || w === null) continue;
        if (typeof w !== 'number' || !(w >= 0) || !Number.isFinite(w)) throw invalidRequest(`Invalid '${at(`ranking_options.hybrid_search.${key}`)}': expected a non-negative number.`, at(`ranking_options.hybrid_search.${key}`));
        weights[target] = w;
      }
      if (weights.embedding === 0 && weights.text === 0) throw invalidRequest(`Invalid '${at('ranking_options.hybrid_search')}': the weights cannot both be 0.`, at('ranking_options.hybrid_search'));
    }
  }
  const filter = body.filters === undefined || body.filters === null ? undefined : parseFilter(body.filters, at('filters'));
  return { maxResults: max, scoreThreshold, weights, ...(filter ? { filter } : {}) };
}
