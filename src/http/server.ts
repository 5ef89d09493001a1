import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { GatewayError } from '../errors.js';
import type { Logger } from '../engine/turn.js';
import { sendError, sendJson } from './json.js';
import { createResponse, deleteResponse, getResponse, listInputItems, type ResponsesRouteDeps } from './responses-routes.js';

export interface HttpDeps extends ResponsesRouteDeps {
  log: Logger;
  health: () => Record<string, unknown>;
  listModels: () => Promise<unknown>;
}

const RESPONSE_PATH = /^\/v1\/responses\/([^/]+)$/;
const INPUT_ITEMS_PATH = /^\/v1\/responses\/([^/]+)\/input_items$/;

/** The HTTP surface on Node's own server: a handful of routes, matched without a framework. */
export function createHttpServer(deps: HttpDeps): Server {
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    route(deps, req, res).catch((err: unknown) => handleError(deps, res, err));
  });
  return server;
}

async function route(deps: HttpDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const method = req.method ?? 'GET';

  if (path === '/v1/responses') {
    if (method === 'POST') return createResponse(deps, req, res);
    throw methodNotAllowed(method, path);
  }
  let match = INPUT_ITEMS_PATH.exec(path);
  if (match) {
    if (method !== 'GET') throw methodNotAllowed(method, path);
    return listInputItems(deps, decodeURIComponent(match[1]), new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)), res);
  }
  match = RESPONSE_PATH.exec(path);
  if (match) {
    const id = decodeURIComponent(match[1]);
    if (method === 'GET') return getResponse(deps, id, res);
    if (method === 'DELETE') return deleteResponse(deps, id, res);
    throw methodNotAllowed(method, path);
  }
  if (path === '/health' && method === 'GET') return sendJson(res, 200, deps.health());
  if (path === '/v1/models' && method === 'GET') return sendJson(res, 200, await deps.listModels());
  throw new GatewayError(404, 'invalid_request_error', 'unknown_url', `Unknown request URL: ${method} ${path}.`);
}

function methodNotAllowed(method: string, path: string): GatewayError {
  return new GatewayError(405, 'invalid_request_error', 'method_not_allowed', `Method ${method} is not allowed on ${path}.`);
}

function handleError(deps: HttpDeps, res: ServerResponse, err: unknown): void {
  const known = err instanceof GatewayError;
  if (!known) deps.log.error({ err }, 'request failed');
  if (res.headersSent) {
    // a stream already started: the engine emitted its terminal event; just close
    if (!res.writableEnded) res.end();
    return;
  }
  if (res.destroyed) return;
  sendError(res, known ? err : new GatewayError(500, 'server_error', 'server_error', 'The gateway hit an internal error.'));
}
