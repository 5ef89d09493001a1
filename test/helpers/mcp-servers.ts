import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '..', '..');
export const FIXTURES = join(ROOT, 'test', 'fixtures', 'mcp');
export const LOOPBACK_PRELOAD = join(FIXTURES, 'loopback-only.mjs');
export const STDIO_FIXTURE = join(FIXTURES, 'stdio-server.mjs');
export const EVERYTHING_BIN = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

/** A port that was free a moment ago on 127.0.0.1 (listen on :0, read it, close). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

// Every child this module starts, so a crashed test file still ends them.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface ChildMcpServer {
  url: string;
  port: number;
  pid: number;
  /** What the child wrote to stdout/stderr so far (for failure messages). */
  output(): string;
  close(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return;
  }
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

/**
 * `@modelcontextprotocol/server-everything` in a child process, forced onto 127.0.0.1 by the
 * loopback preload (it calls `app.listen(PORT)`, which would bind every interface). Resolves once
 * it says it is listening. Streamable HTTP is served at `/mcp`, SSE at `/sse`.
 */
export async function startEverything(mode: 'streamableHttp' | 'sse'): Promise<ChildMcpServer> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', pathToFileURL(LOOPBACK_PRELOAD).href, EVERYTHING_BIN, mode], {
    // a minimal environment: the server has a tool that prints its environment
    env: { PORT: String(port), PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  try {
    await new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`server-everything ${mode} did not start in time:\n${output}`)), 10_000);
      child.stderr!.on('data', (d: Buffer) => {
        output += d.toString();
        if (/listening|running/i.test(output)) {
          clearTimeout(timer);
          ok();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`server-everything ${mode} exited with ${code}:\n${output}`));
      });
    });
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  const path = mode === 'sse' ? '/sse' : '/mcp';
  return { url: `http://127.0.0.1:${port}${path}`, port, pid: child.pid!, output: () => output, close: () => stopChild(child) };
}

/** Whether a process still exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The fault server
// ---------------------------------------------------------------------------------------------

export interface SeenRequest {
  method: string;
  /** JSON-RPC methods in the body (`tools/call:slow` for calls). */
  rpc: string[];
  headers: IncomingHttpHeaders;
  sessionId: string | undefined;
}

export interface FaultStats {
  initialize: number;
  listTools: number;
  /** `tools/call` requests received, by tool name (counted on the wire, before any dispatch). */
  calls: Record<string, number>;
  /** `notifications/cancelled` received on the wire. */
  cancelNotifications: number;
  /** `slow` calls whose abort signal fired (the SDK turns `notifications/cancelled` into it). */
  cancelledSlowCalls: number;
  slowActive: number;
  slowMaxConcurrent: number;
  /** Every HTTP request, with its headers (credential forwarding). */
  requests: SeenRequest[];
  /** TCP connections accepted. */
  connections: number;
  /** Requests answered with 404 because their session was expired. */
  expiredSessionHits: number;
  /** Requests whose socket was destroyed while `broken`. */
  brokenHits: number;
  /** Of those, requests carrying a `tools/call`. */
  brokenCalls: number;
}

export interface FaultServer {
  url: string;
  port: number;
  stats: FaultStats;
  callsTo(name: string): number;
  /** Forgets every session: the next request with an old session id gets HTTP 404. */
  expireSessions(): void;
  /** Only these tools are listed and callable from now on (existing sessions included). */
  setTools(names: string[]): void;
  /** Adds a text tool (listed from now on, in every session). */
  addTool(name: string, text?: string): void;
  /** While broken, every request's socket is destroyed after its body is read (a transport-level failure). */
  setBroken(broken: boolean): void;
  resetStats(): void;
  close(): Promise<void>;
}

const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
export const HUGE_BYTES = 1_000_000;
export const FAULT_TOOL_NAMES = ['echo', 'slow', 'fail', 'throw', 'huge', 'image', 'structured', 'readonly_tool', 'write_tool'];

function freshStats(): FaultStats {
  return {
    initialize: 0,
    listTools: 0,
    calls: {},
    cancelNotifications: 0,
    cancelledSlowCalls: 0,
    slowActive: 0,
    slowMaxConcurrent: 0,
    requests: [],
    connections: 0,
    expiredSessionHits: 0,
    brokenHits: 0,
    brokenCalls: 0,
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<'done' | 'aborted'> {
  return new Promise((ok) => {
    if (signal.aborted) return ok('aborted');
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      ok('done');
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      ok('aborted');
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, id: unknown = null): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id }));
}

/**
 * An in-process MCP server (official SDK: McpServer + StreamableHTTPServerTransport, stateful
 * sessions) on 127.0.0.1 with tools that misbehave on purpose, and counters of what reached it.
 *
 * `throw` answers with a JSON-RPC error. McpServer turns an exception in a tool callback into an
 * `isError` result, so that reply is written by the HTTP layer in front of the transport.
 */
export async function startFaultServer(): Promise<FaultServer> {
  let stats = freshStats();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const retired: StreamableHTTPServerTransport[] = [];
  const liveServers = new Set<{ server: McpServer; tools: Map<string, RegisteredTool> }>();
  const extraTools = new Map<string, string>();
  let active: Set<string> = new Set(FAULT_TOOL_NAMES);
  let broken = false;

  const registerOne = (server: McpServer, name: string): RegisteredTool => {
    switch (name) {
      case 'echo':
        return server.registerTool(name, { description: 'Echoes the message', inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } }, async ({ message }) => ({
          content: [{ type: 'text', text: `Echo: ${message}` }],
        }));
      case 'slow':
        return server.registerTool(name, { description: 'Sleeps ms milliseconds', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
          stats.slowActive++;
          stats.slowMaxConcurrent = Math.max(stats.slowMaxConcurrent, stats.slowActive);
          try {
            const result = await sleep(ms, extra.signal);
            if (result === 'aborted') stats.cancelledSlowCalls++;
            return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
          } finally {
            stats.slowActive--;
          }
        });
      case 'fail':
        return server.registerTool(name, { description: 'Always fails', inputSchema: {} }, async () => ({ isError: true, content: [{ type: 'text', text: 'it broke' }] }));
      case 'throw':
        // never reached: answered by the HTTP layer with a JSON-RPC error
        return server.registerTool(name, { description: 'Throws', inputSchema: {} }, async () => {
          throw new Error('unreachable');
        });
      case 'huge':
        return server.registerTool(name, { description: 'One megabyte of text', inputSchema: {} }, async () => ({
          content: [{ type: 'text', text: 'abcdefghij'.repeat(HUGE_BYTES / 10) }],
        }));
      case 'image':
        return server.registerTool(name, { description: 'An image', inputSchema: {} }, async () => ({
          content: [{ type: 'image', data: TINY_PNG, mimeType: 'image/png' }],
        }));
      case 'structured':
        return server.registerTool(
          name,
          { description: 'Structured content only', inputSchema: {}, outputSchema: { answer: z.number(), unit: z.string() } },
          async () => ({ content: [], structuredContent: { answer: 42, unit: 'widgets' } }),
        );
      case 'readonly_tool':
        return server.registerTool(name, { description: 'Reads', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: 'text', text: 'read ok' }] }));
      case 'write_tool':
        return server.registerTool(name, { description: 'Writes', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'write ok' }] }));
      default: {
        const text = extraTools.get(name) ?? `${name} ok`;
        return server.registerTool(name, { description: `Added tool ${name}`, inputSchema: {} }, async () => ({ content: [{ type: 'text', text }] }));
      }
    }
  };

  const newSessionServer = (): McpServer => {
    const server = new McpServer({ name: 'switchyard-fault-server', version: '1.0.0' });
    const tools = new Map<string, RegisteredTool>();
    for (const name of [...FAULT_TOOL_NAMES, ...extraTools.keys()]) {
      const tool = registerOne(server, name);
      if (!active.has(name)) tool.disable();
      tools.set(name, tool);
    }
    liveServers.add({ server, tools });
    return server;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = typeof req.headers['mcp-session-id'] === 'string' ? req.headers['mcp-session-id'] : undefined;
    const seen: SeenRequest = { method: req.method ?? '', rpc: [], headers: req.headers, sessionId };
    stats.requests.push(seen);
    if (!req.url?.startsWith('/mcp')) return void res.writeHead(404).end();
    if (broken && req.method !== 'POST') {
      stats.brokenHits++;
      return void req.socket.destroy();
    }
    if (req.method === 'GET') return void res.writeHead(405, { allow: 'POST, DELETE' }).end(); // no standalone SSE stream
    if (req.method === 'DELETE') {
      const transport = sessionId ? sessions.get(sessionId) : undefined;
      if (!transport) return jsonRpcError(res, 404, -32001, 'Session not found');
      sessions.delete(sessionId!);
      return transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return void res.writeHead(405).end();

    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return jsonRpcError(res, 400, -32700, 'Parse error');
    }
    const messages = (Array.isArray(body) ? body : [body]) as Array<{ method?: string; id?: unknown; params?: { name?: string } }>;
    for (const m of messages) {
      if (typeof m.method !== 'string') continue;
      if (m.method === 'tools/call') {
        const name = String(m.params?.name);
        seen.rpc.push(`tools/call:${name}`);
        stats.calls[name] = (stats.calls[name] ?? 0) + 1;
      } else {
        seen.rpc.push(m.method);
        if (m.method === 'initialize') stats.initialize++;
        if (m.method === 'tools/list') stats.listTools++;
        if (m.method === 'notifications/cancelled') stats.cancelNotifications++;
      }
    }

    if (broken) {
      // read (and counted) first, so a test can tell calls from other traffic
      stats.brokenHits++;
      if (seen.rpc.some((r) => r.startsWith('tools/call'))) stats.brokenCalls++;
      return void req.socket.destroy();
    }
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId);
      if (!transport) {
        stats.expiredSessionHits++;
        return jsonRpcError(res, 404, -32001, 'Session not found');
      }
      const throwing = messages.find((m) => m.method === 'tools/call' && m.params?.name === 'throw' && active.has('throw'));
      if (throwing) return jsonRpcError(res, 200, -32603, 'kaboom: the tool threw', throwing.id);
      return transport.handleRequest(req, res, body);
    }
    if (!messages.some((m) => m.method === 'initialize')) return jsonRpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    await newSessionServer().connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) jsonRpcError(res, 500, -32603, `fault server: ${String(err)}`);
      else res.destroy();
    });
  });
  server.on('connection', () => stats.connections++);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;

  const applyActive = () => {
    for (const { tools } of liveServers) for (const [name, tool] of tools) if (active.has(name) !== tool.enabled) active.has(name) ? tool.enable() : tool.disable();
  };

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    get stats() {
      return stats;
    },
    callsTo: (name) => stats.calls[name] ?? 0,
    expireSessions() {
      for (const transport of sessions.values()) retired.push(transport);
      sessions.clear();
    },
    setTools(names) {
      active = new Set(names);
      applyActive();
    },
    addTool(name, text) {
      extraTools.set(name, text ?? `${name} ok`);
      active.add(name);
      for (const live of liveServers) if (!live.tools.has(name)) live.tools.set(name, registerOne(live.server, name));
    },
    setBroken(value) {
      broken = value;
    },
    resetStats() {
      stats = freshStats();
    },
    async close() {
      const transports = [...sessions.values(), ...retired];
      sessions.clear();
      await Promise.allSettled(transports.map((t) => t.close()));
      await Promise.allSettled([...liveServers].map(({ server: s }) => s.close()));
      liveServers.clear();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Small raw servers
// ---------------------------------------------------------------------------------------------

export interface Canary {
  port: number;
  /** TCP connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

/** A raw TCP listener on 127.0.0.1 that counts connections and drops them. */
export async function startCanary(): Promise<Canary> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.destroy();
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    connections: () => count,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

export interface RecordingHttpServer {
  url: string;
  origin: string;
  requests: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>;
  close(): Promise<void>;
}

/** A plain HTTP server on 127.0.0.1 that records every request and lets `respond` answer it. */
export async function startRecordingServer(respond: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => void res.writeHead(404).end()): Promise<RecordingHttpServer> {
  const requests: RecordingHttpServer['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    respond(req, res);
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: origin,
    origin,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
