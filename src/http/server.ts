import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Errors } from '../errors.js';
import { answerClientError, connectionsCheckingInterval, writeErrorAndClose, type ConnectionLimits } from './client-errors.js';
import { createDispatch, type Dispatch, type DispatchDeps } from './dispatch.js';
import { sendError } from './json.js';
import { GatewayRequest, GatewayResponse } from '../observability/request-context.js';

export interface HttpDeps extends DispatchDeps {
  /** What a slow or greedy client may hold (defaults: DEFAULT_CONNECTION_LIMITS). */
  connectionLimits?: ConnectionLimits;
  /** Request id, access log and request metrics (src/observability/access-log.ts). */
  observer?: { begin(req: GatewayRequest, res: GatewayResponse): void };
  /** Runs each request's handling in a context (tracing); absent = called directly. */
  wrap?: (req: GatewayRequest, res: GatewayResponse, handle: () => void) => void;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { headersTimeoutMs: 20_000, requestTimeoutMs: 120_000, maxConnections: 4_096 };

/**
 * The HTTP surface on Node's own server. The adapter is the identity: Node's request and response
 * objects are the HttpRequest and HttpResponse the routes take (src/http/exchange.ts), so `dispatch`
 * gets them as they are — nothing is wrapped or copied per request.
 */
export function createHttpServer(deps: HttpDeps, dispatch: Dispatch = createDispatch(deps)): Server {
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
      if (deps.wrap) deps.wrap(req, res, () => dispatch(req, res));
      else dispatch(req, res);
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
