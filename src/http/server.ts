import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Errors, GatewayError, isStoreUnavailable, toGatewayError } from '../errors.js';
import type { Logger } from '../util/logger.js';
import { answerClientError, connectionsCheckingInterval, writeErrorAndClose, type ConnectionLimits } from './client-errors.js';
import { sendError, sendJson } from './json.js';
import { cancelResponse, createResponse, deleteResponse, getResponse, listInputItems, type ResponsesRouteDeps } from './responses-routes.js';
import { GatewayRequest, GatewayResponse } from '../observability/request-context.js';
import { matchRoute, routeLabel, type Route } from './router.js';
import type { KeyRing } from '../auth/key-ring.js';
import { authenticate, needsKey } from './authenticate.js';
import type { Limiter } from './limiter.js';
import { sendMessagesError } from '../messages/errors.js';
import { newId } from '../util/ids.js';

export interface HttpDeps extends ResponsesRouteDeps {
  log: Logger;
  health: () => Record<string, unknown>;
  listModels: () => Promise<unknown>;
  /** Further surfaces (conversations, compaction, …), each a list of routes. */
  routes?: readonly Route[];
  /** What a slow or greedy client may hold (defaults: DEFAULT_CONNECTION_LIMITS). */
  connectionLimits?: ConnectionLimits;
  /** Request id, access log and request metrics (src/observability/access-log.ts). */
  observer?: { begin(req: GatewayRequest, res: GatewayResponse): void };
  /** Runs each request's handling in a context (tracing); absent = called directly. */
  wrap?: (req: GatewayRequest, res: GatewayResponse, handle: () => void) => void;
  /** True once a shutdown began: requests still arriving on open connections get a 503. */
  isClosing?: () => boolean;
  /** API keys: every route but /health, /ready and /metrics needs one while any key exists. */
  keys?: KeyRing;
  /** Per-key rpm and concurrent turns; the gateway's concurrent turns and open streams. */
  limiter?: Limiter;
}

/** What route() needs to admit a request. */
interface Admission {
  keys?: KeyRing;
  limiter?: Limiter;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { headersTimeoutMs: 20_000, requestTimeoutMs: 120_000, maxConnections: 4_096 };

/** The Responses routes of `POST /v1/responses` and its resources. */
function responsesRoutes(deps: HttpDeps): Route[] {
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

/** The HTTP surface on Node's own server: a route table, matched without a framework. */
export function createHttpServer(deps: HttpDeps): Server {
  // extra routes first: a more specific path (e.g. /v1/responses/compact) wins over a pattern
  const routes = [...(deps.routes ?? []), ...responsesRoutes(deps)];
  const limits = deps.connectionLimits ?? DEFAULT_CONNECTION_LIMITS;
  const observer = deps.observer;
  // receiving a request is timed (headers, then headers + body); sending the response is not
  const server = createServer(
    {
      keepAliveTimeout: 65_000,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingInterval(limits),
      // no route depends on Host; Node's own refusal of a request without one has an empty body
      requireHostHeader: false,
      IncomingMessage: GatewayRequest,
      ServerResponse: GatewayResponse,
    },
    (req, res) => {
      observer?.begin(req, res);
      if (deps.isClosing?.()) {
        res.shouldKeepAlive = false;
        sendError(res, Errors.shuttingDown());
        return;
      }
      if (deps.limiter) res.admitStream = deps.limiter.stream.bind(deps.limiter);
      const handle = () => void route(routes, req, res, deps).catch((err: unknown) => handleError(deps, res, err));
      if (deps.wrap) deps.wrap(req, res, handle);
      else handle();
    },
  );
  server.maxConnections = limits.maxConnections;
  // errors before the routes (unparseable request, headers too large, too slow) in the OpenAI shape
  server.on('clientError', answerClientError);
  // CONNECT (a proxy request) is not served; without a listener Node would just drop the socket
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    writeErrorAndClose(socket, Errors.methodNotAllowed('Method CONNECT is not allowed: this is not a proxy.'));
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    sendError(res, Errors.expectationFailed());
  });
  return server as unknown as Server;
}

async function route(routes: readonly Route[], req: IncomingMessage, res: ServerResponse, admission: Admission): Promise<void> {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const method = req.method ?? 'GET';
  const match = matchRoute(routes, method, path);
  if (match && match !== 'method_not_allowed' && req instanceof GatewayRequest) req.routeLabel = routeLabel(match.route);
  // the key first: without one, not even whether a URL exists is told
  if (admission.keys?.enabled && needsKey(path)) {
    const key = authenticate(admission.keys, req);
    if (req instanceof GatewayRequest) {
      req.apiKey = key;
      req.tenant = key.tenant;
    }
    admission.limiter?.request(key, res);
  }
  if (match === 'method_not_allowed') throw Errors.methodNotAllowed(`Method ${method} is not allowed on ${path}.`);
  if (!match) throw Errors.unknownUrl(`Unknown request URL: ${method} ${path}.`);
  if (match.route.turn && admission.limiter) {
    const release = admission.limiter.turn(req instanceof GatewayRequest ? req.apiKey : undefined, res);
    res.once('close', release);
  }
  await match.route.handle(req, res, match.params, new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)));
}

function handleError(deps: HttpDeps, res: ServerResponse, err: unknown): void {
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
  if (res.req?.url?.startsWith('/v1/messages')) sendMessagesError(res, err, newId('req'));
  else sendError(res, toGatewayError(err));
}
