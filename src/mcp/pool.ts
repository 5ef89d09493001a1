import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { untilAborted } from '../util/abort.js';
import type { McpCallResult } from './render.js';

/** How to reach one MCP server. */
export type McpEndpoint =
  | { kind: 'http'; url: string; headers: Record<string, string>; transport: 'auto' | 'streamable-http' | 'sse' }
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string };

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface McpPoolOptions {
  /** fetch used for every HTTP request (the outbound guard's, for request-declared servers). */
  fetch: typeof fetch;
  /** Idle sessions are closed after this long. */
  idleMs: number;
  /** The initialize handshake must finish within this. */
  connectTimeoutMs: number;
  clientName?: string;
}

/**
 * MCP sessions through the official SDK client, pooled by (endpoint, hash of its headers) and
 * reused across requests; idle ones are closed; a session the server has expired (HTTP 404 on a
 * request carrying its session id) is re-initialized once. Listings are re-sent on a session that
 * died under them; tool calls only when they certainly did not reach the server. Concurrent calls
 * share a session (JSON-RPC multiplexes them).
 */
export class McpClientPool {
  private readonly sessions = new Map<string, Promise<PooledSession>>();
  private closed = false;

  constructor(private readonly options: McpPoolOptions) {}

  async listTools(endpoint: McpEndpoint, signal: AbortSignal, timeoutMs: number, maxTools: number): Promise<McpToolInfo[]> {
    // listing changes nothing on the server: on a session gone mid-request it is simply asked again
    return this.withSession(endpoint, signal, 'idempotent', async (client) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: timeoutMs });
        for (const tool of page.tools) {
          if (tools.length >= maxTools) return tools;
          tools.push({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as Record<string, unknown>, annotations: tool.annotations as Record<string, unknown> | undefined });
        }
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  /**
   * `tools/call`. A tool call may change the world, so it is re-sent on a fresh session only when
   * it certainly did not reach the server (see `certainlyNotSent`); a session that dies while the
   * call is in flight fails it with `McpCallInterruptedError`. Abort sends the MCP cancellation
   * notification.
   */
  async callTool(endpoint: McpEndpoint, name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<McpCallResult> {
    return this.withSession(endpoint, signal, 'only-if-not-sent', (client) => client.callTool({ name, arguments: args }, undefined, { signal, timeout: timeoutMs }) as Promise<McpCallResult>);
  }

  async close(): Promise<void> {
    this.closed = true;
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(sessions.map(async (s) => (await s).close()));
  }

  get size(): number {
    return this.sessions.size;
  }

  private async withSession<T>(endpoint: McpEndpoint, signal: AbortSignal, retry: RetryPolicy, use: (client: Client) => Promise<T>): Promise<T> {
    const key = poolKey(endpoint);
    // the handshake is shared by every request to this server: each caller waits only as long as it may
    let session = await untilAborted(this.session(key, endpoint), signal);
    if (session.dead) {
      // known dead before anything was written: nothing reached the server, start over
      await this.drop(key, session);
      session = await untilAborted(this.session(key, endpoint), signal);
    }
    try {
      return await session.use(use);
    } catch (err) {
      const gone = isGoneSession(err, session);
      if (gone) await this.drop(key, session);
      const again = retry === 'idempotent' ? gone : certainlyNotSent(err, session);
      if (!again) {
        if (gone) throw new McpCallInterruptedError(err);
        throw err;
      }
      // refused, not run (an expired session, a connection that never opened): start over once
      const fresh = await untilAborted(this.session(key, endpoint), signal);
      return fresh.use(use);
    }
  }

  private session(key: string, endpoint: McpEndpoint): Promise<PooledSession> {
    if (this.closed) throw new Error('MCP client pool is closed');
    let pending = this.sessions.get(key);
    if (!pending) {
      // idle or closed by the server: the session leaves the pool
      pending = PooledSession.connect(endpoint, this.options, () => void this.dropKey(key, pending!));
      this.sessions.set(key, pending);
      pending.catch(() => {
        if (this.sessions.get(key) === pending) this.sessions.delete(key);
      });
    }
    return pending;
  }

  private async drop(key: string, session: PooledSession): Promise<void> {
    const current = this.sessions.get(key);
    if (current && (await current.catch(() => null)) === session) this.sessions.delete(key);
    await session.close();
  }

  private async dropKey(key: string, pending: Promise<PooledSession>): Promise<void> {
    if (this.sessions.get(key) !== pending) return;
    this.sessions.delete(key);
    await (await pending).close();
  }
}

class PooledSession {
  private idleTimer: NodeJS.Timeout | undefined;
  private active = 0;
  private closed = false;
  /** The transport closed under us (server exited, stream dropped). */
  dead = false;

  private constructor(
    private readonly client: Client,
    private readonly transport: Transport,
    private readonly idleMs: number,
    private readonly onIdle: () => void,
  ) {
    this.armIdleTimer();
    client.onclose = () => {
      this.dead = true;
      if (!this.closed) this.onIdle();
    };
  }

  static async connect(endpoint: McpEndpoint, options: McpPoolOptions, onIdle: () => void): Promise<PooledSession> {
    const info = { name: options.clientName ?? 'switchyard', version: '0.1.0' };
    if (endpoint.kind === 'stdio') {
      const transport = new StdioClientTransport({ command: endpoint.command, args: endpoint.args, env: endpoint.env, cwd: endpoint.cwd, stderr: 'ignore' });
      const client = new Client(info);
      await client.connect(transport, { timeout: options.connectTimeoutMs });
      return new PooledSession(client, transport, options.idleMs, onIdle);
    }
    const url = new URL(endpoint.url);
    const requestInit: RequestInit = { headers: endpoint.headers, redirect: 'manual' };
    if (endpoint.transport !== 'sse') {
      const transport = new StreamableHTTPClientTransport(url, { requestInit, fetch: options.fetch });
      const client = new Client(info);
      try {
        await client.connect(transport, { timeout: options.connectTimeoutMs });
        return new PooledSession(client, transport, options.idleMs, onIdle);
      } catch (err) {
        await client.close().catch(() => {});
        // MCP spec, backwards compatibility: a 4xx to the initialize POST means an old HTTP+SSE server
        if (endpoint.transport === 'streamable-http' || !(err instanceof StreamableHTTPError) || !isClientError(err.code)) throw err;
      }
    }
    const transport = new SSEClientTransport(url, { requestInit, eventSourceInit: { fetch: withHeaders(options.fetch, endpoint.headers) }, fetch: options.fetch });
    const client = new Client(info);
    await client.connect(transport, { timeout: options.connectTimeoutMs });
    return new PooledSession(client, transport, options.idleMs, onIdle);
  }

  get sessionId(): string | undefined {
    return (this.transport as { sessionId?: string }).sessionId;
  }

  async use<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    this.active++;
    clearTimeout(this.idleTimer);
    try {
      return await fn(this.client);
    } finally {
      this.active--;
      this.armIdleTimer();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.client.close().catch(() => {});
  }

  private armIdleTimer(): void {
    if (this.active > 0 || this.closed) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.onIdle(), this.idleMs);
    this.idleTimer.unref();
  }
}

function isClientError(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500;
}

/** When a request may be sent again on a fresh session. */
type RetryPolicy = 'idempotent' | 'only-if-not-sent';

/** A call whose session died while it was in flight: it may have run, so it is not re-sent. */
export class McpCallInterruptedError extends Error {
  constructor(cause: unknown) {
    super('the connection to the MCP server was lost while the call was in flight; it may have run, so it was not retried', { cause });
  }
}

/**
 * The request certainly did not reach the server: the server answered that it does not know our
 * session (HTTP 404 with our session id — MCP spec: it processed nothing), the client had no
 * connection to write to, or the connection was refused before anything was written.
 */
function certainlyNotSent(err: unknown, session: PooledSession): boolean {
  if (err instanceof StreamableHTTPError && err.code === 404 && session.sessionId !== undefined) return true;
  if (err instanceof Error && err.message === 'Not connected') return true;
  for (let cause: unknown = err; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if ((cause as { code?: unknown }).code === 'ECONNREFUSED') return true;
  }
  return false;
}

/** The session cannot serve this request and a fresh one may: expired (404 with our id) or closed. */
function isGoneSession(err: unknown, session: PooledSession): boolean {
  if (err instanceof StreamableHTTPError && err.code === 404 && session.sessionId !== undefined) return true;
  return session.dead || (err instanceof Error && err.message === 'Not connected');
}

/** Sessions are shared only between requests with the same endpoint and the same credentials. */
function poolKey(endpoint: McpEndpoint): string {
  if (endpoint.kind === 'stdio') return `stdio:${JSON.stringify([endpoint.command, endpoint.args, endpoint.cwd ?? '', endpoint.env ?? {}])}`;
  const headers = Object.entries(endpoint.headers).map(([k, v]) => [k.toLowerCase(), v]).sort(([a], [b]) => (a < b ? -1 : 1));
  return `http:${endpoint.transport}:${endpoint.url}#${createHash('sha256').update(JSON.stringify(headers)).digest('hex')}`;
}

/** The SSE transport's GET stream takes headers only through its fetch. */
function withHeaders(fetchFn: typeof fetch, headers: Record<string, string>): typeof fetch {
  return ((input: string | URL | Request, init?: RequestInit) => {
    const merged = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) merged.set(k, v);
    return fetchFn(input, { ...init, headers: merged, redirect: 'manual' });
  }) as typeof fetch;
}
