// Route tests without a socket: a request goes straight into the gateway's dispatch function (the
// one node:http calls, src/http/dispatch.ts) and the answer comes back as a WHATWG Response, so a
// test reads it as it would read fetch's — or hands `inProcessFetch` to the openai SDK as its fetch.
// Streaming, backpressure, disconnects and WebSocket mode are socket tests: here a response is
// collected whole before it is answered.
import type { OutgoingHttpHeaders } from 'node:http';
import { Readable, Writable } from 'node:stream';
import type { Dispatch } from '../../src/http/dispatch.js';
import type { HttpRequest, HttpResponse } from '../../src/http/exchange.js';
import type { HeaderTarget } from '../../src/observability/request-context.js';

/** Statuses whose Response must have no body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** A response collected in memory: the head once, the body's bytes, `close` after the end (as ServerResponse). */
class InProcessResponse extends Writable implements HttpResponse {
  statusCode = 200;
  headersSent = false;
  shouldKeepAlive = true;
  admitStream: ((res: HeaderTarget) => () => void) | undefined = undefined;
  readonly chunks: Buffer[] = [];
  private readonly headers = new Map<string, number | string | readonly string[]>();

  writeHead(status: number, headers?: OutgoingHttpHeaders): this {
    if (this.headersSent) throw new Error('writeHead after the head was sent');
    this.statusCode = status;
    for (const [name, value] of Object.entries(headers ?? {})) if (value !== undefined) this.headers.set(name.toLowerCase(), value);
    this.headersSent = true;
    return this;
  }

  setHeader(name: string, value: number | string | readonly string[]): this {
    // as node:http: a header after the head is a programming error, not a silent no-op
    if (this.headersSent) throw new Error(`setHeader('${name}') after the head was sent`);
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): number | string | string[] | undefined {
    const value = this.headers.get(name.toLowerCase());
    return Array.isArray(value) ? [...value] : (value as number | string | undefined);
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  /** The head as fetch's Headers. */
  responseHeaders(): Headers {
    const headers = new Headers();
    for (const [name, value] of this.headers) {
      if (Array.isArray(value)) for (const one of value) headers.append(name, one);
      else headers.set(name, String(value));
    }
    return headers;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.headersSent = true; // an implicit head, as node:http sends on the first write
    this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    done();
  }

  override _final(done: (err?: Error | null) => void): void {
    this.headersSent = true;
    done();
  }
}

/** A request from a method, path, headers and body bytes; it carries the request context a GatewayRequest has. */
function inProcessRequest(method: string, url: string, headers: Record<string, string>, body: Buffer): HttpRequest {
  const stream = Readable.from(body.length > 0 ? [body] : [], { objectMode: false });
  return Object.assign(stream, { method, url, headers, routeLabel: 'unmatched', apiKey: undefined, tenant: '', model: '' });
}

/** Something that answers requests in process: a started gateway (`startGateway(…)`) or a bare dispatch function. */
export type InProcessTarget = Dispatch | { dispatch: Dispatch };

/**
 * A `fetch` that answers through `target` without a socket. The URL's origin is ignored (only the
 * path and query matter), so it works as the openai SDK's `fetch` with any `baseURL`.
 */
export function inProcessFetch(target: InProcessTarget): typeof fetch {
  const dispatch = typeof target === 'function' ? target : target.dispatch;
  return async (input, init) => {
    const request = new Request(typeof input === 'string' && input.startsWith('/') ? `http://in-process${input}` : input, init);
    const url = new URL(request.url);
    const body = Buffer.from(await request.arrayBuffer());
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (body.length > 0 || !['GET', 'HEAD', 'DELETE'].includes(request.method)) headers['content-length'] ??= String(body.length);
    const res = new InProcessResponse();
    const closed = new Promise<void>((resolve) => res.once('close', resolve));
    dispatch(inProcessRequest(request.method, url.pathname + url.search, headers, body), res);
    await closed;
    const bytes = Buffer.concat(res.chunks);
    return new Response(NULL_BODY.has(res.statusCode) ? null : bytes, { status: res.statusCode, headers: res.responseHeaders() });
  };
}

/** The data lines of an SSE body, parsed (a simple stream collected whole; live streams are socket tests). */
export function sseEvents(text: string): Array<Record<string, any>> {
  return text
    .split('\n\n')
    .map((block) => block.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)));
}
