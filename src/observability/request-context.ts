import { randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiKey } from '../auth/key-ring.js';
import { DEFAULT_TENANT } from '../store/tenant.js';

/** A client's own `x-request-id` is kept when it looks like an id (no spaces, no control characters, bounded). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * The request as the gateway tracks it: one object per request (Node creates it anyway), so the
 * access log, metrics and later the tenant need no side maps. Created by node:http through
 * `createServer({ IncomingMessage: GatewayRequest })`.
 */
export class GatewayRequest extends IncomingMessage {
  /** Returned as `x-request-id`; the client's own when sane. */
  requestId = '';
  /** The matched route's pattern (`/v1/responses/{id}`), a bounded label for logs and metrics. */
  routeLabel = 'unmatched';
  /** The `model` of the request body, once read. */
  model = '';
  /** The API key's tenant; empty while authentication is off (everything is the default tenant's). */
  tenant = '';
  /** The key the request was authenticated with (undefined while authentication is off). */
  apiKey: ApiKey | undefined = undefined;
  /** `performance.now()` when the request arrived. */
  startedAt = 0;
}

/** Whose objects a request may see and make: its key's tenant, or the default one while authentication is off. */
export function tenantOf(req: { tenant?: string }): string {
  const tenant = req.tenant;
  return tenant !== undefined && tenant !== '' ? tenant : DEFAULT_TENANT;
}

/** What a refusal (a limiter's 429) writes to: `retry-after` and the rate headers, while the head is unsent. */
export interface HeaderTarget {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
}

/** A response that may hold an open-stream slot: GatewayResponse, or a route test's in-process one. */
interface StreamSlotHolder extends HeaderTarget {
  admitStream?: ((res: HeaderTarget) => () => void) | undefined;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Takes an open-stream slot for `res` (the gateway's `limits.maxOpenStreams`), given back when
 * the response closes: a `429` when none is free. Call before anything is held for the stream.
 */
export function admitStream(res: StreamSlotHolder): void {
  const admit = res.admitStream;
  if (!admit) return;
  const release = admit(res);
  res.once('close', release);
}

export function requestIdFor(header: string | string[] | undefined): string {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : randomUUID();
}

/** Remembers a request body's `model` for the access log (any route whose body names one). */
export function noteModel(req: { model?: string }, body: unknown): void {
  // only a request that tracks its model (GatewayRequest declares the field) gets one
  if (req.model === undefined || body === null || typeof body !== 'object') return;
  const model = (body as { model?: unknown }).model;
  if (typeof model === 'string') req.model = model.length > 200 ? model.slice(0, 200) : model;
}

/**
 * The response side: remembers when its headers left (time to first byte) and whether it is an
 * event stream (open-streams gauge). Created by node:http through `createServer({ ServerResponse })`.
 */
export class GatewayResponse extends ServerResponse<GatewayRequest> {
  /** `performance.now()` when the headers were written; 0 = not yet. */
  firstByteAt = 0;
  /** The response is an SSE stream (counted as open until it closes). */
  isEventStream = false;
  /** Takes an open-stream slot, or throws a 429 (set by the server when streams are limited). */
  admitStream: ((res: HeaderTarget) => () => void) | undefined = undefined;
  /** Counts open event streams (set by the request observer when metrics are on). */
  streamGauge: { inc(): void; dec(): void } | undefined = undefined;
}

const REQUEST_ID = 'x-request-id';

const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, statusCode: number, reason?: unknown, headers?: unknown) => GatewayResponse;
// writeHead has overloads (`(status, headers)`, `(status, reason, headers)`); one patch on the
// subclass prototype catches explicit and implicit heads
GatewayResponse.prototype.writeHead = function (this: GatewayResponse, statusCode: number, reason?: unknown, headers?: unknown) {
  const given = typeof reason === 'string' ? headers : reason;
  const isObject = given !== null && typeof given === 'object' && !Array.isArray(given);
  if (this.firstByteAt === 0) {
    this.firstByteAt = performance.now();
    const type = isObject ? ((given as Record<string, unknown>)['content-type'] ?? this.getHeader('content-type')) : this.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('text/event-stream')) {
      this.isEventStream = true;
      this.streamGauge?.inc();
    }
  }
  // The request id (the request observer's) goes out with the head, in place of any a route gave.
  // Put in the head's own object, not by setHeader beforehand: one setHeader sends node's
  // writeHead down its slow path (every header of the object set one by one), ≈ 5 µs a request.
  const requestId = this.req?.requestId;
  if (requestId) {
    if (isObject) {
      const head: Record<string, unknown> = { 'x-request-id': requestId };
      for (const name in given as Record<string, unknown>) if (name.toLowerCase() !== REQUEST_ID) head[name] = (given as Record<string, unknown>)[name];
      return typeof reason === 'string' ? writeHead.call(this, statusCode, reason, head) : writeHead.call(this, statusCode, head);
    }
    this.setHeader(REQUEST_ID, requestId);
  }
  return writeHead.call(this, statusCode, reason, headers);
} as typeof GatewayResponse.prototype.writeHead;
