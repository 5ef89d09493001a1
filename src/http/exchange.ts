import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { ApiKey } from '../auth/key-ring.js';
import type { HeaderTarget } from '../observability/request-context.js';

/**
 * The request a route reads: the request line, the headers, the body as a stream of bytes, and
 * what the gateway learns about it on the way (its route, key, tenant, model). Node's
 * IncomingMessage (the gateway's GatewayRequest) is one as it is, so on a socket there is no
 * adapter at all; a test builds one from a Readable (test/helpers/in-process.ts).
 */
export interface HttpRequest extends NodeJS.ReadableStream {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  /** The matched route's pattern (`/v1/responses/{id}`), for logs and metrics. */
  routeLabel?: string;
  /** The key the request was authenticated with (undefined while authentication is off). */
  apiKey?: ApiKey | undefined;
  /** The key's tenant; empty or absent while authentication is off. */
  tenant?: string;
  /** The `model` of the request body, once read (absent: not tracked). */
  model?: string;
}

/**
 * The response a route writes: a head (status and headers, once), then a body written as a
 * stream with backpressure (`write` answers false, `drain` follows) and `close` when it is over,
 * whether finished or cut. Node's ServerResponse (the gateway's GatewayResponse) is one as it is.
 */
export interface HttpResponse extends NodeJS.WritableStream, HeaderTarget {
  statusCode: number;
  readonly headersSent: boolean;
  writeHead(status: number, headers?: OutgoingHttpHeaders): unknown;
  setHeader(name: string, value: number | string | readonly string[]): unknown;
  getHeader(name: string): number | string | string[] | undefined;
  hasHeader(name: string): boolean;
  destroy(error?: Error): unknown;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly writableNeedDrain: boolean;
  /** False: the connection closes after this response (a socket's; nothing to do in process). */
  shouldKeepAlive?: boolean;
  /** Takes an open-stream slot, or throws a 429 (set by the dispatcher when streams are limited). */
  admitStream?: ((res: HeaderTarget) => () => void) | undefined;
}
