import type { HttpRequest } from './exchange.js';
import busboy from 'busboy';
import { Errors, invalidRequest, notFound } from '../errors.js';
import { BlobTooLargeError, type BlobStore } from '../files/blobs.js';
import { type FileRecord, type FileSearchStore } from '../files/store.js';
import { newId } from '../util/ids.js';
import { sendJson } from './json.js';
import type { Route } from './router.js';
import { perTenant } from './tenant-routes.js';

/** The purposes OpenAI's Files API accepts. */
export const FILE_PURPOSES = new Set(['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals']);

export interface FilesDeps {
  store: FileSearchStore;
  blobs: BlobStore;
  maxUploadBytes: number;
  /** Called after a file is deleted (its chunks are gone; caches may drop it). */
  onDeleted?: (fileId: string) => void;
}

const FILE = /^\/v1\/files\/([^/]+)$/;
const CONTENT = /^\/v1\/files\/([^/]+)\/content$/;

/** The public `file` object. */
export function fileObject(f: FileRecord): Record<string, unknown> {
  return { id: f.id, object: 'file', bytes: f.bytes, created_at: f.createdAt, expires_at: f.expiresAt, filename: f.filename, purpose: f.purpose, status: 'processed', status_details: null };
}

/** The Files API: multipart upload streamed to disk, list with cursors, retrieve, delete, content. */
export function filesRoutes(deps: FilesDeps): Route[] {
  return perTenant((owner) => tenantFilesRoutes(deps, owner));
}

function tenantFilesRoutes(deps: FilesDeps, owner: string): Route[] {
  const find = async (id: string): Promise<FileRecord> => {
    const file = await deps.store.getFile(owner, id);
    if (!file) throw notFound(`No such File object: ${id}`, null, 'id');
    return file;
  };
  return [
    {
      method: 'POST',
      path: '/v1/files',
      handle: async (req, res) => {
        const file = await receiveUpload(req, deps, owner);
        await deps.store.insertFile(file);
        sendJson(res, 200, fileObject(file));
      },
    },
    {
      method: 'GET',
      path: '/v1/files',
      handle: async (_req, res, _params, query) => {
        const limitText = query.get('limit');
        const limit = limitText === null ? 10_000 : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw invalidRequest("Invalid 'limit': expected an integer from 1 to 10000.", 'limit');
        const order = query.get('order') ?? 'desc';
        if (order !== 'asc' && order !== 'desc') throw invalidRequest("Invalid 'order': expected 'asc' or 'desc'.", 'order');
        const purpose = query.get('purpose') ?? undefined;
        const page = await deps.store.listFiles(owner, { limit, order, after: query.get('after') ?? undefined, purpose });
        const data = page.data.map(fileObject);
        sendJson(res, 200, { object: 'list', data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore });
      },
    },
    { method: 'GET', path: FILE, handle: async (_req, res, [id]) => sendJson(res, 200, fileObject(await find(id))) },
    {
      method: 'DELETE',
      path: FILE,
      handle: async (_req, res, [id]) => {
        await find(id);
        // metadata first: once it is gone no reader opens the blob; a crash in between leaves an orphan blob, never a dangling record
        await deps.store.deleteFile(owner, id);
        await deps.blobs.delete(id);
        deps.onDeleted?.(id);
        sendJson(res, 200, { id, object: 'file', deleted: true });
      },
    },
    {
      method: 'GET',
      path: CONTENT,
      handle: async (_req, res, [id]) => {
        const file = await find(id);
        const size = await deps.blobs.size(id);
        if (size === undefined) throw Errors.fileContentMissing(id);
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': size,
          'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
        });
        await new Promise<void>((resolve, reject) => {
          const stream = deps.blobs.read(id);
          stream.once('error', reject);
          res.once('close', () => {
            stream.destroy();
            resolve();
          });
          stream.pipe(res);
        });
      },
    },
  ];
}

/** Parses `multipart/form-data` (`file`, `purpose`, `expires_after[…]`), streaming the file to its blob. */
async function receiveUpload(req: HttpRequest, deps: FilesDeps, owner: string): Promise<FileRecord> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(type)) throw invalidRequest("The request must be 'multipart/form-data' with a 'file' and a 'purpose'.", null, 'invalid_request');
  const declared = Number(req.headers['content-length']);
  // a little room for the multipart framing and the other fields
  if (Number.isFinite(declared) && declared > deps.maxUploadBytes + 64 * 1024) throw Errors.fileTooLarge(deps.maxUploadBytes);

  const id = newId('file').replace('_', '-');
  const fields: Record<string, string> = {};
  let filename: string | undefined;
  let bytes = 0;
  let truncated = false;
  let fileCount = 0;
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: { fileSize: deps.maxUploadBytes + 1, files: 2, fields: 20, fieldSize: 4096 } });
  } catch (err) {
    throw invalidRequest(`The multipart body cannot be parsed: ${(err as Error).message}`, null, 'invalid_request');
  }
  const done = new Promise<void>((resolve, reject) => {
    let writing: Promise<void> = Promise.resolve();
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      fileCount++;
      if (name !== 'file' || fileCount > 1) {
        stream.resume();
        return;
      }
      filename = info.filename;
      stream.once('limit', () => {
        truncated = true;
      });
      writing = deps.blobs.write(id, stream, deps.maxUploadBytes).then((size) => {
        bytes = size;
      });
    });
    parser.once('error', (err) => reject(invalidRequest(`The multipart body cannot be parsed: ${(err as Error).message}`, null, 'invalid_request')));
    parser.once('close', () => writing.then(resolve, reject));
  });
  req.pipe(parser);
  try {
    try {
      await done;
    } catch (err) {
      throw err instanceof BlobTooLargeError ? Errors.fileTooLarge(deps.maxUploadBytes) : err;
    }
    if (truncated) throw Errors.fileTooLarge(deps.maxUploadBytes);
    if (filename === undefined) throw invalidRequest("Missing required parameter: 'file'.", 'file', 'missing_required_parameter');
    const purpose = fields.purpose;
    if (purpose === undefined) throw invalidRequest("Missing required parameter: 'purpose'.", 'purpose', 'missing_required_parameter');
    if (!FILE_PURPOSES.has(purpose)) throw invalidRequest(`Invalid 'purpose': expected one of ${[...FILE_PURPOSES].join(', ')}.`, 'purpose');
    const createdAt = Math.floor(Date.now() / 1000);
    return { id, owner, filename: filename || 'upload', purpose, bytes, createdAt, expiresAt: expiresAt(fields, createdAt) };
  } catch (error) {
    await deps.blobs.delete(id);
    throw error;
  }
}

/** `expires_after[anchor]=created_at` + `expires_after[seconds]` (1 hour to 30 days), as OpenAI's. */
function expiresAt(fields: Record<string, string>, createdAt: number): number | null {
  const anchor = fields['expires_after[anchor]'];
  const secondsText = fields['expires_after[seconds]'];
  if (anchor === undefined && secondsText === undefined) return null;
  if (anchor !== 'created_at') throw invalidRequest("Invalid 'expires_after.anchor': expected 'created_at'.", 'expires_after.anchor');
  const seconds = Number(secondsText);
  if (!Number.isInteger(seconds) || seconds < 3600 || seconds > 2_592_000) throw invalidRequest("Invalid 'expires_after.seconds': expected an integer from 3600 to 2592000.", 'expires_after.seconds');
  return createdAt + seconds;
}
