/**
 * One catalogue of client-visible failures (OpenAI error shape). Where a failure goes is decided
 * by the thrower: before the stream starts it is an HTTP error; after, a `response.failed` event.
 */
export type ErrorType = 'invalid_request_error' | 'not_found_error' | 'server_error' | 'upstream_error' | 'timeout_error' | 'rate_limit_error' | 'external_connector_error';

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    /** Whether a client retrying the same request could succeed (sets `x-should-retry`). */
    readonly retryable = false,
  ) {
    super(message);
  }

  toBody(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const invalidRequest = (message: string, param: string | null, code: string | null = 'invalid_value'): GatewayError =>
  new GatewayError(400, 'invalid_request_error', code, message, param);

export const notFound = (message: string, code: string | null = 'not_found', param: string | null = null): GatewayError =>
  new GatewayError(404, 'invalid_request_error', code, message, param);

/**
 * An error the upstream reported inside its stream. The code is the gateway's own (`upstream_error`,
 * whichever dialect): upstream codes (vLLM's `InternalServerError`, a bare `500`) are not part of
 * this API's catalogue, so the upstream's code is quoted in the message instead.
 */
export function upstreamStreamError(event: { message: string; code?: string }, context: string): GatewayError {
  const quoted = event.code ? ` (upstream code ${String(event.code).slice(0, 100)})` : '';
  return new GatewayError(502, 'upstream_error', 'upstream_error', `${context}: ${event.message}${quoted}`);
}

/** Node/PostgreSQL/SQLite codes that mean "the database cannot be reached or is busy right now". */
const STORE_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY', 'SQLITE_LOCKED']);

/**
 * Any error as the client should see it: a GatewayError as is; the database being unreachable as
 * a retryable 503 (not a bug); anything else as a 500.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : '';
  if ((typeof code === 'string' && STORE_UNAVAILABLE_CODES.has(code)) || /Connection terminated|timeout exceeded when trying to connect/.test(message)) {
    return new GatewayError(503, 'server_error', 'store_unavailable', "The gateway's database is unavailable right now; retry shortly.", null, true);
  }
  return new GatewayError(500, 'server_error', 'server_error', 'The gateway hit an internal error.');
}

/** Whether a failure is the database being unavailable (as opposed to a bug). */
export function isStoreUnavailable(err: unknown): boolean {
  return toGatewayError(err).code === 'store_unavailable';
}
