import { createHash } from 'node:crypto';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Errors, GatewayError, ToolDeclarationError, ToolTimeoutError } from '../errors.js';
import { checkOutboundUrl, createGuardedFetch, OutboundBlockedError, outboundPolicy, resolveOutbound, type OutboundPolicy } from '../net/outbound-guard.js';
import type { JsonObject } from '../protocol/responses.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { McpClientPool, type McpEndpoint, type McpToolInfo } from './pool.js';
import { renderCallResult } from './render.js';
import { redactSecrets, urlSecrets } from '../util/redact.js';

/** An MCP server registered by the operator: clients refer to it by `server_label` only. */
export interface OperatorMcpServer {
  url?: string;
  headers?: Record<string, string>;
  transport?: 'auto' | 'streamable-http' | 'sse';
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Narrows what clients may use (intersected with their `allowed_tools`). */
  allowedTools?: string[];
  /** MCP tools run concurrently by default; false serializes calls to one tool. */
  parallelSafe?: boolean;
}

export interface McpConfig {
  servers: Record<string, OperatorMcpServer>;
  /** Which request-declared server URLs may be reached (operator servers are trusted). */
  outbound: Partial<OutboundPolicy>;
  listTimeoutMs: number;
  callTimeoutMs: number;
  idleSessionMs: number;
  maxServersPerRequest: number;
  maxToolsPerServer: number;
  maxOutputBytes: number;
  breaker: { failures: number; cooldownMs: number };
}

export const DEFAULT_MCP_CONFIG: McpConfig = {
  servers: {},
  outbound: { allowHosts: [], allowCidrs: [], allowHttp: false },
  listTimeoutMs: 15_000,
  callTimeoutMs: 60_000,
  idleSessionMs: 300_000,
  maxServersPerRequest: 20,
  maxToolsPerServer: 500,
  maxOutputBytes: 100_000,
  breaker: { failures: 5, cooldownMs: 30_000 },
};

/** A server as one request sees it. */
export interface McpServerRef {
  label: string;
  endpoint: McpEndpoint;
  /** Where to report problems (`tools[2]`). */
  param: string;
  /** Request-declared servers are checked by the outbound guard; operator servers are not. */
  declared: boolean;
  operator?: OperatorMcpServer;
  breakerKey: string;
  /** Credentials of this server (header values, URL userinfo and query values): cut out of every error text. */
  secrets: string[];
}

export interface McpCallOutcome {
  output: string;
  /** Set when the call failed (transport error, timeout, or the tool's own `isError`). */
  error: string | null;
}

/** Discovery and calls for MCP servers: the pool, the outbound guard and a circuit breaker per server. */
export class McpService {
  private readonly declaredPool: McpClientPool;
  private readonly operatorPool: McpClientPool;
  private readonly policy: OutboundPolicy;
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(readonly config: McpConfig) {
    this.policy = outboundPolicy(config.outbound);
    this.declaredPool = new McpClientPool({ fetch: createGuardedFetch(this.policy), idleMs: config.idleSessionMs, connectTimeoutMs: config.listTimeoutMs });
    this.operatorPool = new McpClientPool({ fetch: globalThis.fetch, idleMs: config.idleSessionMs, connectTimeoutMs: config.listTimeoutMs });
  }

  /** Resolves a declaration to a server; refuses URLs the outbound policy forbids (a 400 naming the param). */
  resolve(decl: JsonObject, param: string): McpServerRef {
    const label = decl.server_label as string;
    const url = typeof decl.server_url === 'string' ? decl.server_url : undefined;
    const operator = this.config.servers[label];
    if (url === undefined) {
      if (typeof decl.connector_id === 'string') {
        throw new ToolDeclarationError(`MCP connectors are not available on this gateway ('${decl.connector_id}'); declare a server_url.`, `${param}.connector_id`, 'unsupported_connector');
      }
      if (!operator) throw new ToolDeclarationError(`Unknown MCP server_label '${label}': declare a server_url or ask the operator to configure it.`, `${param}.server_url`, 'missing_required_parameter');
      const endpoint = operatorEndpoint(label, operator);
      return { label, param, declared: false, operator, endpoint, breakerKey: `operator:${label}`, secrets: secretsOf(endpoint) };
    }
    try {
      checkOutboundUrl(url, this.policy);
    } catch (err) {
      if (err instanceof OutboundBlockedError) throw new ToolDeclarationError(err.message, `${param}.server_url`, 'mcp_server_url_not_allowed');
      throw err;
    }
    // credentials go in `authorization` / `headers`, which are never stored or echoed
    if (new URL(url).username || new URL(url).password) {
      throw new ToolDeclarationError(`Invalid '${param}.server_url': credentials in the URL are not accepted; pass them in 'authorization' or 'headers'.`, `${param}.server_url`, 'invalid_value');
    }
    const headers: Record<string, string> = {};
    if (decl.headers && typeof decl.headers === 'object') for (const [k, v] of Object.entries(decl.headers as JsonObject)) if (typeof v === 'string') headers[k] = v;
    if (typeof decl.authorization === 'string') headers.authorization = `Bearer ${decl.authorization}`;
    // one breaker per server *and credentials*: one tenant's bad token must not shut others out
    const credentials = createHash('sha256').update(JSON.stringify(Object.entries(headers).sort())).digest('hex').slice(0, 16);
    const endpoint: McpEndpoint = { kind: 'http', url, headers, transport: 'auto' };
    return { label, param, declared: true, endpoint, breakerKey: `url:${url}#${credentials}`, secrets: [...secretsOf(endpoint), ...(typeof decl.authorization === 'string' ? [decl.authorization] : [])] };
  }

  /** `tools/list` (all pages). A server that cannot be listed fails the request, naming it (OpenAI answers 424). */
  async listTools(server: McpServerRef, signal: AbortSignal): Promise<McpToolInfo[]> {
    if (server.declared && server.endpoint.kind === 'http') {
      try {
        await resolveOutbound(new URL(server.endpoint.url), this.policy);
      } catch (err) {
        if (err instanceof OutboundBlockedError) throw Errors.mcpServerUrlNotAllowed(err.message, `${server.param}.server_url`);
        throw listFailure(server, err);
      }
    }
    const breaker = this.breaker(server);
    if (!breaker.allow()) throw listFailure(server, new Error('the server has failed repeatedly; not contacting it for a while'));
    try {
      const tools = await this.pool(server).listTools(server.endpoint, signal, this.config.listTimeoutMs, this.config.maxToolsPerServer);
      breaker.success();
      return tools;
    } catch (err) {
      recordHealth(breaker, err, signal);
      throw listFailure(server, err);
    }
  }

  /** `tools/call` with a timeout and abort (the SDK sends `notifications/cancelled`). Failures become an error outcome, never a throw. */
  async callTool(server: McpServerRef, name: string, args: JsonObject, signal: AbortSignal, timeoutMs: number): Promise<McpCallOutcome> {
    const breaker = this.breaker(server);
    if (!breaker.allow()) return { output: '', error: `MCP server '${server.label}' is failing repeatedly; the call was not attempted.` };
    try {
      const result = await this.pool(server).callTool(server.endpoint, name, args, signal, timeoutMs);
      breaker.success();
      const output = renderCallResult(result, this.config.maxOutputBytes);
      return result.isError ? { output, error: output || 'the tool reported an error' } : { output, error: null };
    } catch (err) {
      recordHealth(breaker, err, signal);
      return { output: '', error: `MCP call to '${server.label}' failed: ${describe(err, server)}` };
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.declaredPool.close(), this.operatorPool.close()]);
  }

  private pool(server: McpServerRef): McpClientPool {
    return server.declared ? this.declaredPool : this.operatorPool;
  }

  private breaker(server: McpServerRef): CircuitBreaker {
    let breaker = this.breakers.get(server.breakerKey);
    if (breaker) {
      // most recently used last: the oldest entries go first when the map is full
      this.breakers.delete(server.breakerKey);
    } else {
      breaker = new CircuitBreaker(this.config.breaker.failures, this.config.breaker.cooldownMs);
      if (this.breakers.size >= MAX_BREAKERS) this.breakers.delete(this.breakers.keys().next().value!);
    }
    this.breakers.set(server.breakerKey, breaker);
    return breaker;
  }
}

/** Breakers kept at most (one per server and credentials); the least recently used go first. */
const MAX_BREAKERS = 1_000;

/**
 * Only the server's health moves the breaker: transport failures and timeouts count against it;
 * an answer — a JSON-RPC error, a 4xx such as a refused token — means the server is up; a client
 * going away says nothing.
 */
function recordHealth(breaker: CircuitBreaker, err: unknown, signal: AbortSignal): void {
  if (signal.aborted) {
    if (signal.reason instanceof ToolTimeoutError) breaker.failure();
    else breaker.release();
    return;
  }
  const answered =
    (err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed) ||
    (err instanceof StreamableHTTPError && err.code !== undefined && err.code >= 400 && err.code < 500) ||
    err instanceof UnauthorizedError;
  if (answered) breaker.success();
  else breaker.failure();
}

function operatorEndpoint(label: string, server: OperatorMcpServer): McpEndpoint {
  if (server.command) return { kind: 'stdio', command: server.command, args: server.args ?? [], env: server.env, cwd: server.cwd };
  if (!server.url) throw new Error(`mcp.servers.${label} needs a url or a command`);
  return { kind: 'http', url: server.url, headers: server.headers ?? {}, transport: server.transport ?? 'auto' };
}

function listFailure(server: McpServerRef, err: unknown): GatewayError {
  return Errors.mcpListToolsFailed(server.label, describe(err, server), server.param);
}

/** An error as the client may read it: the runtime's and the SDK's texts can quote a URL or a header value. */
function describe(err: unknown, server: McpServerRef): string {
  let text = String(err);
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    text = cause instanceof Error && cause.message !== err.message ? `${err.message} (${cause.message})` : err.message;
  }
  return redactSecrets(text, server.secrets);
}

function secretsOf(endpoint: McpEndpoint): string[] {
  if (endpoint.kind !== 'http') return Object.values(endpoint.env ?? {});
  const headerValues = Object.values(endpoint.headers).flatMap((value) => [value, value.replace(/^Bearer\s+/i, '')]);
  return [...headerValues, ...urlSecrets(endpoint.url)];
}
