import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { Errors, GatewayError } from '../errors.js';

/**
 * Failures Node's HTTP server meets before a request reaches the routes — a request line or
 * headers it cannot parse, headers (or a URL) too large, a client too slow to send its request,
 * an `Expect` it cannot meet — answered like every other error: the OpenAI error shape. Node's
 * own answers to these have empty bodies, which SDKs report as an unexplained failure.
 */

/** Receiving limits for the HTTP server: what a slow or greedy client may hold. */
export interface ConnectionLimits {
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body (the response is not limited: streams may be long). */
  requestTimeoutMs: number;
  /** Open connections at most; beyond that new ones are closed at once. */
  maxConnections: number;
}

/** How often Node looks for requests past their timeout: a fraction of the shortest one, at most once a second. */
export function connectionsCheckingInterval(limits: Pick<ConnectionLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>): number {
  return Math.max(50, Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)));
}

/** Status, code and message for an error Node's parser or its timeouts raised on a connection. */
export function describeClientError(err: { code?: string }): GatewayError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return Errors.requestTimeout();
    case 'HPE_HEADER_OVERFLOW':
      return Errors.headersTooLarge();
    case 'HPE_INVALID_METHOD':
      return Errors.invalidMethod();
    case 'HPE_INVALID_URL':
      return Errors.invalidUrl();
    default:
      return Errors.invalidHttpRequest();
  }
}

interface SocketWithResponse extends Duplex {
  /** Node's response in progress on this socket (internal, but what its own default handler checks). */
  _httpMessage?: { headersSent?: boolean } | null;
}

/** `clientError` listener: one OpenAI-shaped answer written to the socket, then the socket is closed. */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const pending = (socket as SocketWithResponse)._httpMessage;
  // a reset connection cannot be answered, and a response already under way cannot be replaced
  if (err.code === 'ECONNRESET' || !socket.writable || pending?.headersSent) {
    socket.destroy();
    return;
  }
  writeErrorAndClose(socket, describeClientError(err));
}

/**
 * Answers on a bare socket (no ServerResponse exists: a parse error, a refused upgrade or CONNECT)
 * with `error` in the OpenAI shape, then closes the socket.
 */
export function writeErrorAndClose(socket: Duplex, error: GatewayError, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(error.toBody());
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.on('error', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      extra +
      'Connection: close\r\n\r\n' +
      body,
  );
  // a client that never reads its answer must not keep the socket
  setTimeout(() => socket.destroy(), 1_000).unref();
}
