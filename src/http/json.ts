import type { HttpRequest, HttpResponse } from './exchange.js';
import { Errors, GatewayError, invalidRequest } from '../errors.js';
import { findTooDeep, MAX_JSON_DEPTH, pathParam } from '../util/json.js';
import { noteModel } from '../observability/request-context.js';
import { utf8Text, wireText } from '../util/utf8.js';
import { InternedMember } from '../util/interned-member.js';
import { InternedPrefix } from '../util/interned-prefix.js';

/**
 * Tool lists that clients send again with every request (an agent's: Codex ≈ 18 KB, Claude Code
 * more), parsed once: 32 lists of 1 KB to 1 MB, 16 MB in all.
 */
const internedTools = new InternedMember('tools', { minBytes: 1024, maxBytes: 1024 * 1024, count: 32, totalBytes: 16 * 1024 * 1024 });

/**
 * Histories that clients resend whole with every turn (Codex over HTTP with `store: false`), parsed
 * once: what a turn adds is parsed, the rest taken as kept. 32 conversations, 64 MB of their bytes.
 */
const internedInput = new InternedPrefix('input', { minBytes: 4096, maxBytes: 8 * 1024 * 1024, count: 32, totalBytes: 64 * 1024 * 1024 });

/**
 * Conversations a client resends whole with every request to the stateless Messages surface
 * (Claude Code, its newest message marked for caching), parsed once as `input` is.
 */
const internedMessages = new InternedPrefix('messages', { minBytes: 4096, maxBytes: 8 * 1024 * 1024, count: 32, totalBytes: 64 * 1024 * 1024 });

export function sendJson(res: HttpResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** `sendJson` of a body whose JSON is already made. */
export function sendJsonText(res: HttpResponse, status: number, json: string, headers?: Record<string, string>): void {
  const text = wireText(json);
  const head: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': typeof text === 'string' ? Buffer.byteLength(text) : text.length };
  // copied in a loop: an object spread is the slow path on Node 20 (bench/object-spread.mjs)
  if (headers) for (const name in headers) head[name] = headers[name];
  res.writeHead(status, head);
  res.end(text);
}

export function sendError(res: HttpResponse, err: GatewayError): void {
  const headers: Record<string, string> = {};
  if (err.status >= 500) headers['x-should-retry'] = String(err.retryable);
  sendJson(res, err.status, err.toBody(), headers);
}

/** Reads a JSON body, refusing more than `limit` bytes with 413 before buffering them. */
export async function readJsonBody(req: HttpRequest, limit: number): Promise<unknown> {
  return jsonBody(req, await readRawBody(req, limit));
}

/** The JSON of a body `readRawBody` read (`readJsonBody` without an async layer of its own, for the hot path). */
export function jsonBody(req: HttpRequest, body: Buffer): unknown {
  const parsed = internedInput.parse(body, parseWithTools);
  noteModel(req, parsed);
  return parsed;
}

/** `readJsonBody` of a Messages request: its resent `messages` taken as kept where they were sent before. */
export async function readMessagesBody(req: HttpRequest, limit: number): Promise<unknown> {
  const parsed = internedMessages.parse(await readRawBody(req, limit), parseWithTools);
  noteModel(req, parsed);
  return parsed;
}

function parseWithTools(body: Buffer): unknown {
  return internedTools.parse(body, parseBody);
}

function parseBody(body: Buffer): unknown {
  const text = utf8Text(body);
  if (text.length === 0) throw invalidRequest('The request body is empty; expected a JSON object.', null, 'invalid_json');
  return parseClientJson(text, 'request body');
}

/** A WebSocket message's JSON (`parseClientJson`), its tool list taken as kept when the client sent it before. */
export function parseClientMessage(bytes: Buffer): unknown {
  return internedTools.parse(bytes, parseMessage);
}

function parseMessage(bytes: Buffer): unknown {
  return parseClientJson(utf8Text(bytes), 'message');
}

/** Reads a body as bytes, refusing more than `limit` bytes with 413 before buffering them. */
export function readRawBody(req: HttpRequest, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  // plain events rather than an async iterator: this runs on every request
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * Parses JSON a client sent (an HTTP body, a WebSocket message): invalid JSON, or JSON nested
 * deeper than MAX_JSON_DEPTH, is a 400 — the latter naming where — so nothing downstream (tool
 * normalization, the upstream request, storage) ever meets a value it cannot serialize.
 */
export function parseClientJson(text: string, what: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidRequest(`The ${what} is not valid JSON: ${(err as Error).message}`, null, 'invalid_json');
  }
  const path = findTooDeep(value, MAX_JSON_DEPTH);
  if (path) {
    const param = typeof path[0] === 'string' ? pathParam(path) : null;
    throw invalidRequest(`Invalid ${param ? `'${param}'` : `${what}`}: JSON nested more than ${MAX_JSON_DEPTH} levels deep.`, param, 'nesting_too_deep');
  }
  return value;
}

function tooLarge(limit: number): GatewayError {
  return Errors.requestTooLarge(limit);
}
