import type { HttpRequest } from './exchange.js';
import { pipeline } from 'node:stream/promises';
import { Errors, invalidRequest, notFound } from '../errors.js';
import { ContainerError, type ContainerService } from '../containers/service.js';
import { type ContainerFileRecord, type ContainerRecord } from '../containers/store.js';
import type { JsonObject } from '../protocol/responses.js';
import { isPlainObject } from '../tools/validate.js';
import { readJsonBody, readRawBody, sendJson } from './json.js';
import { parseListQuery } from './list-query.js';
import type { Route } from './router.js';
import { tenantOf } from '../observability/request-context.js';

const CONTAINER = /^\/v1\/containers\/([^/]+)$/;
const FILES = /^\/v1\/containers\/([^/]+)\/files$/;
const FILE = /^\/v1\/containers\/([^/]+)\/files\/([^/]+)$/;
const CONTENT = /^\/v1\/containers\/([^/]+)\/files\/([^/]+)\/content$/;

/**
 * The Containers API (`/v1/containers`, its files and their content) over the ContainerService.
 * Every container belongs to a tenant: the request's API key's (the default tenant while authentication is off).
 */
export function containerRoutes(service: ContainerService, options: { maxBodyBytes: number; maxUploadBytes: number }): Route[] {
  const owner = (req: HttpRequest) => tenantOf(req);
  const container = async (req: HttpRequest, id: string): Promise<ContainerRecord> => {
    const found = await service.get(id, owner(req));
    if (!found) throw notFound(`Container with id '${id}' not found.`, 'container_not_found');
    return found;
  };
  const file = async (record: ContainerRecord, fileId: string): Promise<ContainerFileRecord> => {
    const found = await service.getFile(record, fileId);
    if (!found) throw notFound(`File with id '${fileId}' not found in container '${record.id}'.`, 'file_not_found');
    return found;
  };

  return [
    {
      method: 'POST',
      path: '/v1/containers',
      handle: (req, res) =>
        mapErrors(async () => {
          const body = await readJsonBody(req, options.maxBodyBytes);
          if (!isPlainObject(body)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
          const created = await service.create({ owner: owner(req), ...parseCreate(body) });
          sendJson(res, 200, containerObject(created));
        }),
    },
    {
      method: 'GET',
      path: '/v1/containers',
      handle: async (req, res, _params, query) => {
        const page = await service.list(owner(req), parseListQuery(query));
        sendJson(res, 200, listObject(page.data.map(containerObject), page.hasMore));
      },
    },
    { method: 'GET', path: CONTAINER, handle: async (req, res, [id]) => sendJson(res, 200, containerObject(await container(req, id))) },
    {
      method: 'DELETE',
      path: CONTAINER,
      handle: async (req, res, [id]) => {
        if (!(await service.delete(id, owner(req)))) throw notFound(`Container with id '${id}' not found.`, 'container_not_found');
        sendJson(res, 200, { id, object: 'container.deleted', deleted: true });
      },
    },
    {
      method: 'POST',
      path: FILES,
      handle: (req, res, [id]) =>
        mapErrors(async () => {
          const record = await container(req, id);
          const upload = await readUpload(req, options.maxUploadBytes, options.maxBodyBytes);
          sendJson(res, 200, fileObject(await service.addFile(record, upload.filename, upload.data)));
        }),
    },
    {
      method: 'GET',
      path: FILES,
      handle: async (req, res, [id], query) => {
        const page = await service.listFiles(await container(req, id), parseListQuery(query));
        sendJson(res, 200, listObject(page.data.map(fileObject), page.hasMore));
      },
    },
    { method: 'GET', path: FILE, handle: async (req, res, [id, fileId]) => sendJson(res, 200, fileObject(await file(await container(req, id), fileId))) },
    {
      method: 'DELETE',
      path: FILE,
      handle: async (req, res, [id, fileId]) => {
        if (!(await service.deleteFile(await container(req, id), fileId))) throw notFound(`File with id '${fileId}' not found in container '${id}'.`, 'file_not_found');
        sendJson(res, 200, { id: fileId, object: 'container.file.deleted', deleted: true });
      },
    },
    {
      method: 'GET',
      path: CONTENT,
      handle: async (req, res, [id, fileId]) => {
        const record = await container(req, id);
        const found = await file(record, fileId);
        const opened = await service.openFile(record, found);
        if (!opened) throw notFound(`File with id '${fileId}' is no longer in container '${id}'.`, 'file_not_found');
        try {
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': opened.bytes });
          await pipeline(opened.handle.createReadStream({ start: 0, end: Math.max(0, opened.bytes - 1), autoClose: false }), res);
        } finally {
          await opened.handle.close();
        }
      },
    },
  ];
}

function parseCreate(body: JsonObject): { name: string; memoryLimit?: string; expiresAfterMinutes?: number; fileIds?: string[] } {
  if (typeof body.name !== 'string' || body.name.length === 0) throw invalidRequest("Missing required parameter: 'name'.", 'name', 'missing_required_parameter');
  const out: { name: string; memoryLimit?: string; expiresAfterMinutes?: number; fileIds?: string[] } = { name: body.name };
  if (body.memory_limit !== undefined && body.memory_limit !== null) {
    if (typeof body.memory_limit !== 'string') throw invalidRequest("Invalid type for 'memory_limit': expected a string such as '1g'.", 'memory_limit', 'invalid_type');
    out.memoryLimit = body.memory_limit;
  }
  const expires = body.expires_after;
  if (expires !== undefined && expires !== null) {
    if (!isPlainObject(expires) || expires.anchor !== 'last_active_at') throw invalidRequest("Invalid 'expires_after': expected {anchor: 'last_active_at', minutes}.", 'expires_after.anchor');
    const minutes = expires.minutes;
    if (typeof minutes !== 'number' || !Number.isInteger(minutes) || minutes < 1 || minutes > 20) throw invalidRequest("Invalid 'expires_after.minutes': expected an integer from 1 to 20.", 'expires_after.minutes');
    out.expiresAfterMinutes = minutes;
  }
  if (body.file_ids !== undefined && body.file_ids !== null) {
    if (!Array.isArray(body.file_ids) || body.file_ids.some((f) => typeof f !== 'string')) throw invalidRequest("Invalid type for 'file_ids': expected an array of strings.", 'file_ids', 'invalid_type');
    out.fileIds = body.file_ids as string[];
  }
  return out;
}

/** A multipart upload (`file` part), as the OpenAI SDK sends it; a JSON `file_id` needs the Files API. */
async function readUpload(req: HttpRequest, maxUploadBytes: number, maxBodyBytes: number): Promise<{ filename: string; data: Uint8Array }> {
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('application/json')) {
    const body = await readJsonBody(req, maxBodyBytes);
    const fileId = isPlainObject(body) ? body.file_id : undefined;
    throw invalidRequest(
      typeof fileId === 'string' ? "'file_id' needs the Files API, which this gateway does not have yet; upload the file itself as multipart/form-data." : "Missing required parameter: 'file'.",
      typeof fileId === 'string' ? 'file_id' : 'file',
      typeof fileId === 'string' ? 'unsupported_parameter' : 'missing_required_parameter',
    );
  }
  if (!type.startsWith('multipart/form-data')) throw invalidRequest("Expected multipart/form-data with a 'file' part.", 'file', 'invalid_type');
  const raw = await readRawBody(req, maxUploadBytes + 64 * 1024);
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': type } }).formData();
  } catch {
    throw invalidRequest('The multipart body could not be parsed.', 'file', 'invalid_value');
  }
  const part = form.get('file');
  if (!part || typeof part === 'string') throw invalidRequest("Missing required parameter: 'file'.", 'file', 'missing_required_parameter');
  const data = new Uint8Array(await part.arrayBuffer());
  if (data.byteLength > maxUploadBytes) throw Errors.fileTooLarge(maxUploadBytes);
  return { filename: part.name || 'upload', data };
}

async function mapErrors(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ContainerError) {
      throw err.kind === 'not_found' ? notFound(err.message, 'container_not_found', err.param) : invalidRequest(err.message, err.param, err.kind === 'unavailable' ? 'code_interpreter_unavailable' : 'invalid_value');
    }
    throw err;
  }
}

function containerObject(record: ContainerRecord): JsonObject {
  return {
    id: record.id,
    object: 'container',
    created_at: record.createdAt,
    status: 'running',
    expires_after: { anchor: 'last_active_at', minutes: record.expiresAfterMinutes },
    last_active_at: record.lastActiveAt,
    memory_limit: record.memoryLimit,
    name: record.name,
  };
}

function fileObject(file: ContainerFileRecord): JsonObject {
  return { id: file.id, object: 'container.file', created_at: file.createdAt, bytes: file.bytes, container_id: file.containerId, path: file.path, source: file.source };
}

function listObject(data: JsonObject[], hasMore: boolean): JsonObject {
  return { object: 'list', data, first_id: data.length > 0 ? data[0].id : null, last_id: data.length > 0 ? data[data.length - 1].id : null, has_more: hasMore };
}

