import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { Errors, GatewayError } from '../errors.js';
import { withFields } from '../util/objects.js';
import { wireText } from '../util/utf8.js';
import { abortSignalOf, type Cancellation } from '../util/abort.js';
import { clientForPool } from '../util/undici-clients.js';
import type { UpstreamOptions } from './client.js';
import { MAX_ERROR_BODY_BYTES, UpstreamExchange, type ExchangeStart } from './exchange.js';
import { UpstreamEventStream, type DecodePayload } from './event-stream.js';

/**
 * A request body in chunks (`chatRequestBody`) up to this size is joined into one buffer, sent
 * with its headers in one write; a larger one (a long history's kept bytes) goes out chunk by
 * chunk, where the copy would cost more than the writes.
 */
const JOIN_BODY_BYTES = 256 * 1024;

/** Largest successful JSON answer read whole (a model list). */
const MAX_JSON_BYTES = 8 * 1024 * 1024;

/**
 * HTTP transport shared by the dialects: an undici pool with keep-alive, retries with backoff
 * for connection failures and 5xx strictly before the upstream's first byte, connect /
 * first-token / idle timeouts, and abort on client disconnect.
 */
export class UpstreamTransport {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly headers: Record<string, string>;

  constructor(private readonly options: UpstreamOptions) {
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      // null = unlimited: every open stream needs its own upstream connection (HTTP/1.1)
      connections: options.connections > 0 ? options.connections : null,
      pipelining: 1,
      // no connection for a request aborted in flight (util/undici-clients.ts)
      factory: clientForPool,
      keepAliveTimeout: 30_000,
      connect: { timeout: options.connectTimeoutMs },
      headersTimeout: options.firstTokenTimeoutMs,
      bodyTimeout: options.idleTimeoutMs,
    });
    this.headers = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (options.apiKey) this.headers.authorization = `Bearer ${options.apiKey}`;
  }

  /**
   * POSTs JSON (a string, or the chunks of one: `chatRequestBody`) and returns the accepted (2xx)
   * exchange, retrying only what is safe to retry.
   */
  async post(path: string, json: string | readonly Buffer[], signal: Cancellation): Promise<UpstreamExchange> {
    let body: string | Buffer | readonly Buffer[];
    let headers = this.headers;
    if (typeof json === 'string') body = wireText(json);
    else {
      body = json;
      let length = 0;
      for (const chunk of json) length += chunk.length;
      // undici writes each chunk of an iterable body in a write (a syscall) of its own, one
      // async-iterator turn apart: joining a body of a few chunks costs less than that
      if (length <= JOIN_BODY_BYTES) body = Buffer.concat(json as Buffer[], length);
      else headers = withFields(this.headers, { 'content-length': String(length) });
    }
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw abortedError();
      const exchange = new UpstreamExchange();
      const onAbort = () => exchange.abort(new Error('client disconnected'));
      signal.addEventListener('abort', onAbort, { once: true });
      let start: ExchangeStart;
      try {
        // undici takes an iterable body (its types list only a Readable): each chunk is written as it is
        this.pool.dispatch({ path: this.basePath + path, method: 'POST', headers, body: body as string | Buffer }, exchange);
        start = await exchange.started;
      } catch (err) {
        signal.removeEventListener('abort', onAbort);
        await this.retryAfter(err, attempt, signal);
        continue;
      }
      if (start.ok) {
        // the same listener guards the stream until its reader (`events`) is done with it
        exchange.unwatch = () => signal.removeEventListener('abort', onAbort);
        return exchange;
      }
      signal.removeEventListener('abort', onAbort);
      const failure = statusError(start.status, start.body);
      if (attempt < this.options.maxRetries && start.status >= 500) {
        await this.backoff(attempt, signal);
        continue;
      }
      throw failure;
    }
  }

  /** A small JSON GET (model lists): no retries, bounded by the connect and first-token timeouts. */
  async getJson(path: string, signal: AbortSignal): Promise<unknown> {
    let response;
    try {
      response = await this.pool.request({ path: this.basePath + path, method: 'GET', headers: { accept: 'application/json', ...(this.headers.authorization ? { authorization: this.headers.authorization } : {}) }, signal });
    } catch (err) {
      if (signal.aborted) throw abortedError();
      throw connectionError(err, this.options);
    }
    const ok = response.statusCode < 300;
    const text = await readCapped(response.body, ok ? MAX_JSON_BYTES : MAX_ERROR_BODY_BYTES);
    if (!ok) throw statusError(response.statusCode, text);
    try {
      return JSON.parse(text);
    } catch {
      throw Errors.upstreamInvalidResponse(`The upstream answered ${path} with something that is not JSON.`);
    }
  }

  /**
   * Sends a client's request body as is (pass-through routes) and returns the upstream's answer
   * unread, whatever its status; connection failures are retried, then thrown as GatewayError.
   */
  async forward(path: string, body: Buffer | string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.headers.authorization) headers.authorization = this.headers.authorization;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.pool.request({ path: this.basePath + path, method: 'POST', headers, body, signal });
      } catch (err) {
        await this.retryAfter(err, attempt, signal);
      }
    }
  }

  /** After a connection failure: waits out the backoff when another attempt may succeed, else throws it as the client sees it. */
  private async retryAfter(err: unknown, attempt: number, signal: Cancellation): Promise<void> {
    if (signal.aborted) throw abortedError();
    const failure = connectionError(err, this.options);
    if (attempt < this.options.maxRetries && failure.retryable) return this.backoff(attempt, signal);
    throw failure;
  }

  /** The raw events of an accepted streaming exchange: its SSE `data` payloads, decoded by `decode`. */
  events(exchange: UpstreamExchange, decode: DecodePayload, signal: Cancellation): UpstreamEventStream {
    return new UpstreamEventStream(exchange, decode, signal, this.options);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private async backoff(attempt: number, signal: Cancellation): Promise<void> {
    const delay = this.options.retryBaseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
    try {
      await sleep(delay, undefined, { signal: abortSignalOf(signal) });
    } catch {
      throw abortedError();
    }
  }
}

/** A body as text, at most `limit` bytes of it: the rest is not read (the connection is dropped). */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(size + chunk.length > limit ? chunk.subarray(0, limit - size) : chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

function abortedError(): GatewayError {
  return Errors.clientDisconnected();
}

function connectionError(err: unknown, options: UpstreamOptions): GatewayError {
  const code = (err as { code?: string }).code;
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    return Errors.upstreamTimeout(`The upstream did not answer within ${options.firstTokenTimeoutMs} ms.`);
  }
  const cause = code ?? (err as Error).message;
  return err instanceof undiciErrors.ConnectTimeoutError ? Errors.upstreamConnectTimeout(cause) : Errors.upstreamUnavailable(cause);
}

/**
 * How servers word a prompt longer than the model's context: vLLM ("maximum context length is N
 * tokens", "longer than the maximum model length"), SGLang ("longer than the model's context
 * length"), llama.cpp ("exceeds the available context size").
 */
const CONTEXT_OVERFLOW = /maximum context length|maximum model length|model's context length|exceeds the available context size/i;

/** Upstream 4xx keep their status and message; 5xx become 502. */
function statusError(status: number, text: string): GatewayError {
  let message = text;
  let param: string | null = null;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown; param?: unknown } | string; message?: unknown } | null;
    // whatever the upstream put in these fields, only strings are quoted
    if (parsed && typeof parsed.error === 'object' && parsed.error !== null && typeof parsed.error.message === 'string' && parsed.error.message) {
      message = parsed.error.message;
      param = typeof parsed.error.param === 'string' ? parsed.error.param : null;
    } else if (parsed && typeof parsed.error === 'string') message = parsed.error;
    else if (parsed && typeof parsed.message === 'string' && parsed.message) message = parsed.message;
  } catch {
    // not JSON (or cut at the size cap): keep the text
  }
  message = message.slice(0, 2000);
  if (status >= 500) return Errors.upstreamFailed(status, message);
  if (status === 429) return Errors.upstreamRateLimited(message);
  if (status === 404) return Errors.upstreamNotFound(message, param);
  // the conversation outgrew the model: OpenAI's code, which agents (Codex) answer by compacting
  if (status === 400 && CONTEXT_OVERFLOW.test(message)) return Errors.contextLengthExceeded(message);
  return Errors.upstreamRejected(status, message, param);
}
