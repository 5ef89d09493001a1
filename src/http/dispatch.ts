import { Errors, GatewayError, isStoreUnavailable, toGatewayError } from '../errors.js';
import type { Logger } from '../util/logger.js';
import type { KeyRing } from '../auth/key-ring.js';
import { sendMessagesError } from '../messages/errors.js';
import { newId } from '../util/ids.js';
import { authenticate, needsKey } from './authenticate.js';
import type { HttpRequest, HttpResponse } from './exchange.js';
import { sendError, sendJson } from './json.js';
import type { Limiter } from './limiter.js';
import { cancelResponse, createResponse, deleteResponse, getResponse, listInputItems, type ResponsesRouteDeps } from './responses-routes.js';
import { matchRoute, routeLabel, type Route } from './router.js';

/** What answering a request needs: the routes' dependencies, admission, and what to do on a failure. */
export interface DispatchDeps extends ResponsesRouteDeps {
  log: Logger;
  health: () => Record<string, unknown>;
  listModels: () => Promise<unknown>;
  /** Further surfaces (conversations, compaction, …), each a list of routes. */
  routes?: readonly Route[];
  /** True once a shutdown began: requests still arriving on open connections get a 503. */
  isClosing?: () => boolean;
  /** API keys: every route but /health, /ready and /metrics needs one while any key exists. */
  keys?: KeyRing;
  /** Per-key rpm and concurrent turns; the gateway's concurrent turns and open streams. */
  limiter?: Limiter;
}

/** Answers one request: the same function behind node:http (src/http/server.ts) and a route test's in-process call. */
export type Dispatch = (req: HttpRequest, res: HttpResponse) => void;

/** The Responses routes of `POST /v1/responses` and its resources. */
function responsesRoutes(deps: DispatchDeps): Route[] {
  return [
    { method: 'POST', path: '/v1/responses', handle: (req, res) => createResponse(deps, req, res), turn: true },
    { method: 'GET', path: /^\/v1\/responses\/([^/]+)\/input_items$/, handle: (req, res, [id], query) => listInputItems(deps, req, id, query, res) },
    { method: 'POST', path: /^\/v1\/responses\/([^/]+)\/cancel$/, handle: (req, res, [id]) => cancelResponse(deps, req, id, res) },
    { method: 'GET', path: /^\/v1\/responses\/([^/]+)$/, handle: (req, res, [id], query) => getResponse(deps, req, id, query, res) },
    { method: 'DELETE', path: /^\/v1\/responses\/([^/]+)$/, handle: (req, res, [id]) => deleteResponse(deps, req, id, res) },
    { method: 'GET', path: '/health', handle: (_req, res) => sendJson(res, 200, deps.health()) },
    { method: 'GET', path: '/v1/models', handle: async (_req, res) => sendJson(res, 200, await deps.listModels()) },
  ];
}

/** The route table, matched without a framework: admission (shutdown, key, limits), the route, errors in the OpenAI shape. */
export function createDispatch(deps: DispatchDeps): Dispatch {
  // extra routes first: a more specific path (e.g. /v1/responses/compact) wins over a pattern
  const routes = [...(deps.routes ?? []), ...responsesRoutes(deps)];
  const admitStream = deps.limiter ? deps.limiter.stream.bind(deps.limiter) : undefined;
  return (req, res) => {
    if (deps.isClosing?.()) {
      res.shouldKeepAlive = false;
      sendError(res, Errors.shuttingDown());
      return;
    }
    if (admitStream) res.admitStream = admitStream;
    let handled: Promise<void> | void;
    try {
      handled = route(routes, req, res, deps);
    } catch (err) {
      handleError(deps, req, res, err);
      return;
    }
    handled?.catch((err: unknown) => handleError(deps, req, res, err));
  };
}

/** Admits the request and hands it to its route (what that returns: no async layer of its own). */
function route(routes: readonly Route[], req: HttpRequest, res: HttpResponse, deps: DispatchDeps): Promise<void> | void {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const method = req.method ?? 'GET';
  const match = matchRoute(routes, method, path);
  if (match && match !== 'method_not_allowed') req.routeLabel = routeLabel(match.route);
  // the key first: without one, not even whether a URL exists is told
  if (deps.keys?.enabled && needsKey(path)) {
    const key = authenticate(deps.keys, req);
    req.apiKey = key;
    req.tenant = key.tenant;
    deps.limiter?.request(key, res);
  }
  if (match === 'method_not_allowed') throw Errors.methodNotAllowed(`Method ${method} is not allowed on ${path}.`);
  if (!match) throw Errors.unknownUrl(`Unknown request URL: ${method} ${path}.`);
  if (match.route.turn && deps.limiter) {
    const release = deps.limiter.turn(req.apiKey, res);
    res.once('close', release);
  }
  return match.route.handle(req, res, match.params, new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)));
}

function handleError(deps: DispatchDeps, req: HttpRequest, res: HttpResponse, err: unknown): void {
  const known = err instanceof GatewayError;
  if (!known && !isStoreUnavailable(err)) deps.log.error({ err }, 'request failed');
  else if (!known) deps.log.warn({ err: (err as Error).message }, 'request failed: the database is unavailable');
  if (res.headersSent) {
    // a stream already started: the engine emitted its terminal event; just close
    if (!res.writableEnded) res.end();
    return;
  }
  if (res.destroyed) return;
  // the Messages surface's clients (Anthropic SDKs) read Anthropic's error shape, also for a 401 or 429 of admission
  if (req.url?.startsWith('/v1/messages')) sendMessagesError(res, err, newId('req'));
  else sendError(res, toGatewayError(err));
}
