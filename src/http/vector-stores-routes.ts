import type { HttpRequest, HttpResponse } from './exchange.js';
import { invalidRequest, notFound } from '../errors.js';
import { parseMetadata } from '../engine/request.js';
import { type BatchView, type FileSearchStore, type StoreFileRecord, type StoreFileStatus, type VectorStoreView } from '../files/store.js';
import { chunkingObject, parseAttributes, parseChunkingStrategy, parseExpiresAfter, parseSearchOptions } from '../retrieval/request-options.js';
import type { QueryRewriter } from '../retrieval/query-rewrite.js';
import type { Retriever } from '../retrieval/search.js';
import { isPlainObject } from '../tools/validate.js';
import { newId } from '../util/ids.js';
import { readJsonBody, sendJson } from './json.js';
import type { Route } from './router.js';
import { perTenant } from './tenant-routes.js';

export interface VectorStoresDeps {
  store: FileSearchStore;
  retriever: Retriever;
  /** `rewrite_query: true` on a direct search. */
  rewriter: QueryRewriter;
  /** Wakes ingestion after files were attached. */
  notifyIngestion(): void;
  maxBodyBytes: number;
  /** `openai-poll-after-ms` on objects still in progress. */
  pollAfterMs: number;
}

const STORE = /^\/v1\/vector_stores\/([^/]+)$/;
const SEARCH = /^\/v1\/vector_stores\/([^/]+)\/search$/;
const FILES = /^\/v1\/vector_stores\/([^/]+)\/files$/;
const FILE = /^\/v1\/vector_stores\/([^/]+)\/files\/([^/]+)$/;
const FILE_CONTENT = /^\/v1\/vector_stores\/([^/]+)\/files\/([^/]+)\/content$/;
const BATCHES = /^\/v1\/vector_stores\/([^/]+)\/file_batches$/;
const BATCH = /^\/v1\/vector_stores\/([^/]+)\/file_batches\/([^/]+)$/;
const BATCH_CANCEL = /^\/v1\/vector_stores\/([^/]+)\/file_batches\/([^/]+)\/cancel$/;
const BATCH_FILES = /^\/v1\/vector_stores\/([^/]+)\/file_batches\/([^/]+)\/files$/;

const FILE_STATUSES = new Set(['in_progress', 'completed', 'failed', 'cancelled']);
const MAX_FILES_PER_REQUEST = 2_000;
const DAY = 86_400;

const now = () => Math.floor(Date.now() / 1000);

/** The public `vector_store` object; status as OpenAI's: expired · in_progress (any file) · completed. */
export function vectorStoreObject(v: VectorStoreView): Record<string, unknown> {
  const expiresAt = v.expiresAfter ? v.lastActiveAt + v.expiresAfter.days * DAY : null;
  const status = expiresAt !== null && expiresAt <= now() ? 'expired' : v.fileCounts.in_progress > 0 ? 'in_progress' : 'completed';
  // keyword-only (no embeddings upstream) is said in the store's metadata, as the issue asks
  const metadata = v.keywordOnlyReason ? { ...v.metadata, switchyard_retrieval: `keyword_only: ${v.keywordOnlyReason}`.slice(0, 512) } : v.metadata;
  return {
    id: v.id,
    object: 'vector_store',
    created_at: v.createdAt,
    name: v.name,
    description: null,
    usage_bytes: v.usageBytes,
    file_counts: v.fileCounts,
    status,
    expires_after: v.expiresAfter,
    expires_at: expiresAt,
    last_active_at: v.lastActiveAt,
    metadata,
  };
}

export function storeFileObject(f: StoreFileRecord): Record<string, unknown> {
  return {
    id: f.fileId,
    object: 'vector_store.file',
    usage_bytes: f.usageBytes,
    created_at: f.createdAt,
    vector_store_id: f.storeId,
    status: f.status,
    last_error: f.lastError,
    chunking_strategy: chunkingObject(f.chunking),
    attributes: f.attributes,
  };
}

/** Batch status: cancelled once cancel was asked and nothing runs; in_progress while files run; else completed. */
export function batchObject(b: BatchView): Record<string, unknown> {
  const running = b.fileCounts.in_progress > 0;
  const status = b.cancelled ? (running ? 'cancelling' : 'cancelled') : running ? 'in_progress' : b.fileCounts.total > 0 && b.fileCounts.failed === b.fileCounts.total ? 'failed' : 'completed';
  return { id: b.id, object: 'vector_store.files_batch', created_at: b.createdAt, vector_store_id: b.storeId, status, file_counts: b.fileCounts };
}

/** The Vector Stores API: stores, files in a store, file batches, and direct search. */
export function vectorStoresRoutes(deps: VectorStoresDeps): Route[] {
  return perTenant((owner) => tenantVectorStoresRoutes(deps, owner));
}

function tenantVectorStoresRoutes(deps: VectorStoresDeps, owner: string): Route[] {
  const { store } = deps;
  const body = async (req: HttpRequest): Promise<Record<string, unknown>> => {
    const value = await readJsonBody(req, deps.maxBodyBytes);
    if (!isPlainObject(value)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
    return value;
  };
  const vectorStore = async (id: string): Promise<VectorStoreView> => {
    const found = await store.getStore(owner, id);
    if (!found) throw notFound(`No vector store found with id '${id}'.`, null, 'vector_store_id');
    return found;
  };
  const storeFile = async (storeId: string, fileId: string): Promise<StoreFileRecord> => {
    await vectorStore(storeId);
    const found = await store.getStoreFile(owner, storeId, fileId);
    if (!found) throw notFound(`No file found with id '${fileId}' in vector store '${storeId}'.`, null, 'file_id');
    return found;
  };
  const batch = async (storeId: string, batchId: string): Promise<BatchView> => {
    await vectorStore(storeId);
    const found = await store.getBatch(owner, storeId, batchId);
    if (!found) throw notFound(`No file batch found with id '${batchId}' in vector store '${storeId}'.`, null, 'batch_id');
    return found;
  };
  /** Checks every file exists (a missing one is a 404 naming it) before anything is attached. */
  const checkFiles = async (fileIds: string[], param: string) => {
    for (const [i, id] of fileIds.entries()) if (!(await store.getFile(owner, id))) throw notFound(`No file found with id '${id}'.`, null, `${param}[${i}]`);
  };
  const send = (res: HttpResponse, object: Record<string, unknown>, inProgress: boolean) =>
    sendJson(res, 200, object, inProgress ? { 'openai-poll-after-ms': String(deps.pollAfterMs) } : {});
  const sendStore = (res: HttpResponse, v: VectorStoreView) => send(res, vectorStoreObject(v), v.fileCounts.in_progress > 0);
  const sendBatch = (res: HttpResponse, b: BatchView) => send(res, batchObject(b), b.fileCounts.in_progress > 0);

  return [
    {
      method: 'POST',
      path: '/v1/vector_stores',
      handle: async (req, res) => {
        const request = await body(req);
        const name = optionalString(request.name, 'name');
        const metadata = parseMetadata(request.metadata);
        const expiresAfter = parseExpiresAfter(request.expires_after);
        const chunking = parseChunkingStrategy(request.chunking_strategy);
        const fileIds = stringArray(request.file_ids, 'file_ids');
        await checkFiles(fileIds, 'file_ids');
        const id = newId('vs');
        const at = now();
        await store.insertStore({ id, owner, name, createdAt: at, lastActiveAt: at, metadata, expiresAfter, keywordOnlyReason: null });
        if (fileIds.length > 0) {
          await store.attachFiles(owner, id, fileIds.map((fileId) => ({ fileId, attributes: {}, chunking, batchId: null })), at);
          deps.notifyIngestion();
        }
        sendStore(res, await vectorStore(id));
      },
    },
    {
      method: 'GET',
      path: '/v1/vector_stores',
      handle: async (_req, res, _params, query) => {
        const page = await store.listStores(owner, listOptions(query));
        sendJson(res, 200, listBody(page.data.map(vectorStoreObject), page.hasMore));
      },
    },
    { method: 'GET', path: STORE, handle: async (_req, res, [id]) => sendStore(res, await vectorStore(id)) },
    {
      method: 'POST',
      path: STORE,
      handle: async (req, res, [id]) => {
        const request = await body(req);
        await vectorStore(id);
        const patch: Parameters<FileSearchStore['updateStore']>[2] = { lastActiveAt: now() };
        if (request.name !== undefined) patch.name = optionalString(request.name, 'name');
        if (request.metadata !== undefined) patch.metadata = parseMetadata(request.metadata);
        if (request.expires_after !== undefined) patch.expiresAfter = parseExpiresAfter(request.expires_after);
        sendStore(res, (await store.updateStore(owner, id, patch))!);
      },
    },
    {
      method: 'DELETE',
      path: STORE,
      handle: async (_req, res, [id]) => {
        await vectorStore(id);
        await store.deleteStore(owner, id);
        sendJson(res, 200, { id, object: 'vector_store.deleted', deleted: true });
      },
    },
    {
      method: 'POST',
      path: SEARCH,
      handle: async (req, res, [id]) => {
        const request = await body(req);
        const queries = typeof request.query === 'string' ? [request.query] : Array.isArray(request.query) && request.query.every((q) => typeof q === 'string') ? (request.query as string[]) : undefined;
        if (!queries || queries.length === 0 || queries.every((q) => q.trim() === '')) throw invalidRequest("Invalid 'query': expected a non-empty string or array of strings.", 'query');
        const options = parseSearchOptions(request, null, 10);
        if (request.rewrite_query !== undefined && request.rewrite_query !== null && typeof request.rewrite_query !== 'boolean') throw invalidRequest("Invalid type for 'rewrite_query': expected a boolean.", 'rewrite_query', 'invalid_type');
        await vectorStore(id);
        // what is searched, and shown back as `search_query`: the rewritten queries when asked for
        const searched = request.rewrite_query === true ? await Promise.all(queries.map((q) => deps.rewriter.rewrite(q))) : queries;
        const hits = await deps.retriever.search({ owner, storeIds: [id], queries: searched, ...options });
        await store.updateStore(owner, id, { lastActiveAt: now() });
        sendJson(res, 200, {
          object: 'vector_store.search_results.page',
          search_query: searched,
          data: hits.map((h) => ({ file_id: h.fileId, filename: h.filename, score: h.score, attributes: h.attributes, content: [{ type: 'text', text: h.text }] })),
          has_more: false,
          next_page: null,
        });
      },
    },
    {
      method: 'POST',
      path: FILES,
      handle: async (req, res, [storeId]) => {
        const request = await body(req);
        if (typeof request.file_id !== 'string' || request.file_id === '') throw invalidRequest("Missing required parameter: 'file_id'.", 'file_id', 'missing_required_parameter');
        const attributes = parseAttributes(request.attributes);
        const chunking = parseChunkingStrategy(request.chunking_strategy);
        await vectorStore(storeId);
        await checkFiles([request.file_id], 'file_id');
        await store.attachFiles(owner, storeId, [{ fileId: request.file_id, attributes, chunking, batchId: null }], now());
        deps.notifyIngestion();
        send(res, storeFileObject((await store.getStoreFile(owner, storeId, request.file_id))!), true);
      },
    },
    {
      method: 'GET',
      path: FILES,
      handle: async (_req, res, [storeId], query) => {
        await vectorStore(storeId);
        const page = await store.listStoreFiles(owner, storeId, { ...listOptions(query), ...statusFilter(query) });
        sendJson(res, 200, listBody(page.data.map(storeFileObject), page.hasMore, (o) => o.id as string));
      },
    },
    {
      method: 'GET',
      path: FILE,
      handle: async (_req, res, [storeId, fileId]) => {
        const f = await storeFile(storeId, fileId);
        send(res, storeFileObject(f), f.status === 'in_progress');
      },
    },
    {
      method: 'POST',
      path: FILE,
      handle: async (req, res, [storeId, fileId]) => {
        const request = await body(req);
        if (request.attributes === undefined) throw invalidRequest("Missing required parameter: 'attributes'.", 'attributes', 'missing_required_parameter');
        const attributes = parseAttributes(request.attributes);
        await storeFile(storeId, fileId);
        const updated = await store.updateStoreFileAttributes(owner, storeId, fileId, attributes);
        send(res, storeFileObject(updated!), updated!.status === 'in_progress');
      },
    },
    {
      method: 'DELETE',
      path: FILE,
      handle: async (_req, res, [storeId, fileId]) => {
        await storeFile(storeId, fileId);
        await store.detachFile(owner, storeId, fileId);
        sendJson(res, 200, { id: fileId, object: 'vector_store.file.deleted', deleted: true });
      },
    },
    {
      method: 'GET',
      path: FILE_CONTENT,
      handle: async (_req, res, [storeId, fileId]) => {
        await storeFile(storeId, fileId);
        const chunks = await store.fileChunks(storeId, fileId);
        sendJson(res, 200, { object: 'vector_store.file_content.page', data: chunks.map((text) => ({ type: 'text', text })), has_more: false, next_page: null });
      },
    },
    {
      method: 'POST',
      path: BATCHES,
      handle: async (req, res, [storeId]) => {
        const request = await body(req);
        const attributes = parseAttributes(request.attributes);
        const chunking = parseChunkingStrategy(request.chunking_strategy);
        let entries: Array<{ fileId: string; attributes: typeof attributes; chunking: typeof chunking }>;
        if (request.files !== undefined) {
          if (request.file_ids !== undefined) throw invalidRequest("Give either 'file_ids' or 'files', not both.", 'files');
          if (!Array.isArray(request.files) || request.files.length === 0) throw invalidRequest("Invalid 'files': expected a non-empty array.", 'files');
          entries = request.files.map((raw, i) => {
            if (!isPlainObject(raw) || typeof raw.file_id !== 'string') throw invalidRequest(`Missing required parameter: 'files[${i}].file_id'.`, `files[${i}].file_id`, 'missing_required_parameter');
            return {
              fileId: raw.file_id,
              attributes: raw.attributes === undefined ? attributes : parseAttributes(raw.attributes, `files[${i}].attributes`),
              chunking: raw.chunking_strategy === undefined ? chunking : parseChunkingStrategy(raw.chunking_strategy, `files[${i}].chunking_strategy`),
            };
          });
        } else {
          const ids = stringArray(request.file_ids, 'file_ids');
          if (ids.length === 0) throw invalidRequest("Missing required parameter: 'file_ids' (or 'files').", 'file_ids', 'missing_required_parameter');
          entries = ids.map((fileId) => ({ fileId, attributes, chunking }));
        }
        await vectorStore(storeId);
        await checkFiles(entries.map((e) => e.fileId), request.files !== undefined ? 'files' : 'file_ids');
        const id = newId('vsfb');
        const at = now();
        await store.insertBatch({ id, storeId, owner, createdAt: at, cancelled: false });
        await store.attachFiles(owner, storeId, entries.map((e) => ({ ...e, batchId: id })), at);
        deps.notifyIngestion();
        sendBatch(res, (await store.getBatch(owner, storeId, id))!);
      },
    },
    { method: 'GET', path: BATCH, handle: async (_req, res, [storeId, batchId]) => sendBatch(res, await batch(storeId, batchId)) },
    {
      method: 'POST',
      path: BATCH_CANCEL,
      handle: async (_req, res, [storeId, batchId]) => {
        await batch(storeId, batchId);
        sendBatch(res, (await store.cancelBatch(owner, storeId, batchId))!);
      },
    },
    {
      method: 'GET',
      path: BATCH_FILES,
      handle: async (_req, res, [storeId, batchId], query) => {
        await batch(storeId, batchId);
        const page = await store.listStoreFiles(owner, storeId, { ...listOptions(query), ...statusFilter(query), batchId });
        sendJson(res, 200, listBody(page.data.map(storeFileObject), page.hasMore));
      },
    },
  ];
}

function listOptions(query: URLSearchParams): { limit: number; order: 'asc' | 'desc'; after?: string; before?: string } {
  const limitText = query.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidRequest("Invalid 'limit': expected an integer from 1 to 100.", 'limit');
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidRequest("Invalid 'order': expected 'asc' or 'desc'.", 'order');
  return { limit, order, after: query.get('after') ?? undefined, before: query.get('before') ?? undefined };
}

function statusFilter(query: URLSearchParams): { status?: StoreFileStatus } {
  const filter = query.get('filter');
  if (filter === null) return {};
  if (!FILE_STATUSES.has(filter)) throw invalidRequest("Invalid 'filter': expected in_progress, completed, failed or cancelled.", 'filter');
  return { status: filter as StoreFileStatus };
}

function listBody(data: Array<Record<string, unknown>>, hasMore: boolean, idOf = (o: Record<string, unknown>) => o.id as string): Record<string, unknown> {
  return { object: 'list', data, first_id: data.length > 0 ? idOf(data[0]) : null, last_id: data.length > 0 ? idOf(data[data.length - 1]) : null, has_more: hasMore };
}

function optionalString(value: unknown, param: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalidRequest(`Invalid type for '${param}': expected a string.`, param, 'invalid_type');
  return value;
}

function stringArray(value: unknown, param: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw invalidRequest(`Invalid type for '${param}': expected an array of strings.`, param, 'invalid_type');
  if (value.length > MAX_FILES_PER_REQUEST) throw invalidRequest(`Invalid '${param}': at most ${MAX_FILES_PER_REQUEST} files per request.`, param);
  return [...new Set(value as string[])];
}
