import type { ExecutionFactory } from '../handler.js';
import { DEFAULT_OWNER } from '../../files/store.js';
import { ID_PREFIX, type JsonObject } from '../../protocol/responses.js';
import { failed, toolError, toolResult, type GatewayExecution, type GatewayInvocation, type ToolOutcome } from '../types.js';
import { parseSearchOptions, type SearchOptions } from '../../retrieval/request-options.js';
import type { Retriever, SearchHit } from '../../retrieval/search.js';

/** At most this many queries per call (a model looping on queries does not multiply the work). */
const MAX_QUERIES = 5;
/** Passage text shown to the model per result. */
const MAX_PASSAGE_CHARS = 4_000;

interface CallState {
  index: number;
  id: string;
}

interface Detail {
  queries: string[];
  hits: SearchHit[];
}

/**
 * `file_search` run by the gateway: the model's `queries` go to the retriever over the declared
 * vector stores (with the declaration's filters and ranking options); each passage is numbered as
 * a citable file source, so `[n]` in the answer becomes a `file_citation`. Projected as a
 * `file_search_call` (in_progress → searching → completed), with `results` when the request's
 * `include` asks for `file_search_call.results`. A failed search is a failed call, never an
 * empty result.
 */
export function fileSearchExecutionFactory(retriever: Retriever, timeoutMs: number): ExecutionFactory {
  return (declaration, request) => {
    const storeIds = declaration.vector_store_ids as string[];
    const options = parseSearchOptions(declaration, null, 10);
    // the request's tenant searches its own vector stores only
    return fileSearchExecution(retriever, request.tenant ?? DEFAULT_OWNER, storeIds, options, request.include.includes('file_search_call.results'), timeoutMs);
  };
}

function fileSearchExecution(retriever: Retriever, owner: string, storeIds: string[], options: SearchOptions, includeResults: boolean, timeoutMs: number): GatewayExecution {
  return {
    parallelSafe: true,
    timeoutMs,
    begin(_inv, emit): CallState {
      const id = emit.newId(ID_PREFIX.fileSearch);
      const index = emit.add({ type: 'file_search_call', id, status: 'in_progress', queries: [], results: null });
      emit.event('response.file_search_call.in_progress', index);
      emit.event('response.file_search_call.searching', index);
      return { index, id };
    },
    async run(inv) {
      return search(retriever, owner, storeIds, options, inv);
    },
    end(inv, outcome, emit, state) {
      const { index, id } = state as CallState;
      const detail = outcome.detail as Detail | undefined;
      const queries = detail?.queries ?? queriesOf(inv.args);
      const results =
        includeResults && detail && !failed(outcome)
          ? detail.hits.map((h) => ({ file_id: h.fileId, filename: h.filename, score: h.score, text: h.text, attributes: h.attributes }))
          : null;
      if (!failed(outcome)) emit.event('response.file_search_call.completed', index);
      emit.done(index, { type: 'file_search_call', id, status: failed(outcome) ? 'failed' : 'completed', queries, results });
    },
  };
}

/** The model's queries: `queries` (array), or a lone `query` string some models send anyway. */
function queriesOf(args: JsonObject): string[] {
  const raw = Array.isArray(args.queries) ? args.queries : typeof args.query === 'string' ? [args.query] : typeof args.queries === 'string' ? [args.queries] : [];
  return raw.filter((q): q is string => typeof q === 'string' && q.trim() !== '').slice(0, MAX_QUERIES);
}

async function search(retriever: Retriever, owner: string, storeIds: string[], options: SearchOptions, inv: GatewayInvocation): Promise<ToolOutcome> {
  const queries = queriesOf(inv.args);
  if (queries.length === 0) return toolError("file_search needs 'queries': an array of one or more non-empty strings.", 'model_error', { queries, hits: [] });
  let hits: SearchHit[];
  try {
    hits = await retriever.search({ owner, storeIds, queries, ...options }, inv.signal);
  } catch (err) {
    return toolError(`the file search failed: ${err instanceof Error ? err.message : String(err)}`, 'fatal', { queries, hits: [] });
  }
  if (hits.length === 0) return toolResult(`No passages in the files match ${queries.map((q) => JSON.stringify(q)).join(', ')}.`, { queries, hits });
  const numbers = inv.emit.registerSources(hits.map((h) => ({ fileId: h.fileId, filename: h.filename })));
  const body = hits.map((h, i) => `[${numbers[i]}] ${h.filename} (score ${h.score.toFixed(2)})\n${h.text.length > MAX_PASSAGE_CHARS ? `${h.text.slice(0, MAX_PASSAGE_CHARS)}…` : h.text}`);
  return toolResult([`File search results for ${queries.map((q) => JSON.stringify(q)).join(', ')}:`, ...body, 'Cite the passages you use as [n].'].join('\n\n'), { queries, hits });
}
