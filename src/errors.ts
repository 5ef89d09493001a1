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
