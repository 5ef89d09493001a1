// The edges of the HTTP surface (issue 9, defects 14, 15, 17): JSON nested too deep, requests
// that arrive too slowly or never finish, and errors Node raises before a request reaches the
// routes — each answered with the OpenAI error shape, never a 5xx, a hang or an empty body.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startGateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>;

let tg: TestGateway;
const HEADERS_TIMEOUT_MS = 600;
const REQUEST_TIMEOUT_MS = 1_200;

beforeAll(async () => {
  tg = await startTestGateway({ config: { limits: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS, maxConnections: 64 } } });
});

afterAll(async () => {
  await tg.close();
});

const DEEP = '"__deep__"';

/** `depth` levels of JSON-schema-like nesting, as text (building it as a value would overflow JSON.stringify here too). */
function nestedText(depth: number): string {
  return '{"type":"object","properties":{"deeper":'.repeat(depth) + '{}' + '}}'.repeat(depth);
}

/** `body` as JSON with every `DEEP` placeholder replaced by `depth` levels of nesting. */
function withDeep(body: unknown, depth: number): string {
  return JSON.stringify(body).replaceAll(DEEP, nestedText(depth));
}

/** A deep value without building it recursively: `[[[…]]]` as text. */
function deepArrayText(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

function expectErrorShape(body: Json): Json {
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
  return body.error;
}

/** Sends raw bytes on a fresh connection and collects everything until the server closes it. */
function rawExchange(host: string, port: number, write: (socket: Socket) => void, timeoutMs = 15_000): Promise<{ text: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, host);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => write(socket));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), elapsedMs: Date.now() - started });
    });
  });
}

function parseRawResponse(text: string): { status: number; headers: string; body: Json } {
  const split = text.indexOf('\r\n\r\n');
  expect(split).toBeGreaterThan(0);
  const head = text.slice(0, split);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  return { status, headers: head, body: JSON.parse(text.slice(split + 4)) as Json };
}

describe('JSON nested too deep (defect 14)', () => {
  it('5,000 levels in tools[].parameters: 400 naming the param, nothing sent upstream, nothing stored', async () => {
    const before = tg.simulator.requests.length;
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: withDeep({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'deep', parameters: '__deep__' }] }, 2_500),
    });
    expect(res.status).toBe(400);
    const error = expectErrorShape((await res.json()) as Json);
    expect(error.code).toBe('nesting_too_deep');
    expect(error.param).toMatch(/^tools\[0\]\.parameters/);
    expect(tg.simulator.requests.length).toBe(before);
  });

  it("an unknown tool type's config and a deep input item are refused the same way", async () => {
    for (const [body, param] of [
      [{ model: 'm', input: 'hi', tools: [{ type: 'vendor_thing', config: '__deep__' }] }, /^tools\[0\]\.config/],
      [{ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: 'x', extra: '__deep__' }] }, /^input\[0\]\.extra/],
      [{ model: 'm', input: 'hi', metadata: '__deep__' }, /^metadata/],
    ] as const) {
      const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: withDeep(body, 3_000) });
      expect(res.status).toBe(400);
      const error = expectErrorShape((await res.json()) as Json);
      expect(error.code).toBe('nesting_too_deep');
      expect(error.param).toMatch(param);
    }
  });

  it('a deep top-level array body and deep conversation items are 400s too', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deepArrayText(10_000) });
    expect(res.status).toBe(400);
    expect(expectErrorShape((await res.json()) as Json).code).toBe('nesting_too_deep');
    const conv = await fetch(`${tg.baseURL}/conversations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: withDeep({ metadata: {}, items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x', extra: '__deep__' }] }] }, 3_000),
    });
    expect(conv.status).toBe(400);
    expect(expectErrorShape((await conv.json()) as Json).param).toMatch(/^items\[0\]\.content\[0\]/);
  });

  it('a realistic nested schema (40 levels) is still accepted', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: scripted({ rounds: [{ text: 'ok' }] }), tools: [{ type: 'function', name: 'deep', parameters: JSON.parse(nestedText(20)) }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Json).status).toBe('completed');
  });

  it('over WebSocket: a deep message is one error event naming the param, and the socket keeps serving', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const messages: Json[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data)) as Json));
    ws.send(withDeep({ type: 'response.create', model: 'm', input: 'hi', tools: [{ type: 'function', name: 'deep', parameters: '__deep__' }] }, 3_000));
    ws.send(JSON.stringify({ type: 'response.create', model: 'm', input: scripted({ rounds: [{ text: 'after' }] }) }));
    for (let waited = 0; !messages.some((m) => m.type === 'response.completed') && waited < 10_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    ws.close();
    expect(messages[0].type).toBe('error');
    expect(messages[0].status).toBe(400);
    expect(messages[0].error.code).toBe('nesting_too_deep');
    expect(messages[0].error.param).toMatch(/^tools\[0\]\.parameters/);
    expect(messages.at(-1)?.type).toBe('response.completed');
  });
});

describe('slow and incomplete requests (defect 15)', () => {
  it('headers that never finish (slowloris) are answered 408 in the OpenAI shape and closed', async () => {
    const { port } = tg.gateway;
    const result = await rawExchange('127.0.0.1', port, (socket) => {
      socket.write('POST /v1/responses HTTP/1.1\r\nHost: x\r\n');
      // one more header line now and then, never the blank line that ends them
      const drip = setInterval(() => socket.writable && socket.write(`X-Drip-${Date.now()}: 1\r\n`), 150);
      socket.once('close', () => clearInterval(drip));
    });
    const { status, body } = parseRawResponse(result.text);
    expect(status).toBe(408);
    expect(expectErrorShape(body).code).toBe('request_timeout');
    expect(result.elapsedMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
  });

  it('a body that stops half way is answered 408 and closed', async () => {
    const { port } = tg.gateway;
    const result = await rawExchange('127.0.0.1', port, (socket) => {
      socket.write('POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"m","inp');
    });
    const { status, body } = parseRawResponse(result.text);
    expect(status).toBe(408);
    expect(expectErrorShape(body).code).toBe('request_timeout');
    expect(result.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
  });

  it('50 idle half-open connections all get a 408, and a normal request is served meanwhile', async () => {
    const { port } = tg.gateway;
    const all = Array.from({ length: 50 }, () => rawExchange('127.0.0.1', port, (socket) => socket.write('GET /health HTTP/1.1\r\n'), 20_000));
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted({ rounds: [{ text: 'served' }] }) }) });
    expect(res.status).toBe(200);
    const results = await Promise.all(all);
    const timedOut = results.filter((r) => r.text.startsWith('HTTP/1.1 408'));
    console.log(`slow connections: ${results.length} opened, ${timedOut.length} answered 408 and closed`);
    expect(timedOut.length).toBe(50);
  }, 30_000);

  it('connections beyond limits.maxConnections (64) are closed at once', async () => {
    const { port } = tg.gateway;
    const results = await Promise.all(Array.from({ length: 150 }, () => rawExchange('127.0.0.1', port, (socket) => socket.write('GET /health HTTP/1.1\r\n'), 20_000)));
    const dropped = results.filter((r) => r.text === '');
    const timedOut = results.filter((r) => r.text.startsWith('HTTP/1.1 408'));
    console.log(`connection cap: ${results.length} opened, ${dropped.length} refused over the cap, ${timedOut.length} answered 408`);
    expect(dropped.length + timedOut.length).toBe(150);
    expect(dropped.length).toBeGreaterThanOrEqual(150 - 64);
    expect(timedOut.length).toBeGreaterThan(0);
  }, 30_000);

  it('a long streamed response is not cut by the request timeout', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, input: scripted({ rounds: [{ text: 'a b c d e f g h i j k l m n o p q r s t', delay_ms: 150 }] }) }),
    });
    const text = await res.text();
    expect(text).toContain('response.completed');
  }, 20_000);
});

describe('errors before the routes (defect 17)', () => {
  async function raw(request: string): Promise<{ status: number; headers: string; body: Json }> {
    const result = await rawExchange('127.0.0.1', tg.gateway.port, (socket) => socket.write(request));
    return parseRawResponse(result.text);
  }

  it('an unknown method is a 400 in the OpenAI shape', async () => {
    const { status, headers, body } = await raw('FROB /v1/responses HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(status).toBe(400);
    expect(headers.toLowerCase()).toContain('content-type: application/json');
    expect(expectErrorShape(body).code).toBe('invalid_method');
  });

  it('headers or a URL too large are a 431 in the OpenAI shape', async () => {
    const big = await raw(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big.status).toBe(431);
    expect(expectErrorShape(big.body).code).toBe('request_header_fields_too_large');
    const longUrl = await raw(`GET /v1/responses/${'r'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(longUrl.status).toBe(431);
    expectErrorShape(longUrl.body);
  });

  it('garbage instead of a request line is a 400 in the OpenAI shape', async () => {
    const { status, body } = await raw('\u0001\u0002 not http at all\r\n\r\n');
    expect(status).toBe(400);
    expect(expectErrorShape(body).type).toBe('invalid_request_error');
  });

  it('an Expect other than 100-continue is a 417 in the OpenAI shape, without echoing the header', async () => {
    const { status, body } = await raw('GET /v1/models HTTP/1.1\r\nHost: x\r\nExpect: secret-token-123\r\nConnection: close\r\n\r\n');
    expect(status).toBe(417);
    expect(expectErrorShape(body).code).toBe('expectation_failed');
    expect(JSON.stringify(body)).not.toContain('secret-token-123');
  });
});

describe('smaller defects (19)', () => {
  async function post(body: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  }

  it('a value too large is reported as above the maximum, not below the minimum', async () => {
    const { status, body } = await post({ model: 'm', input: 'hi', top_logprobs: 50 });
    expect(status).toBe(400);
    const error = expectErrorShape(body);
    expect(error.param).toBe('top_logprobs');
    expect(error.code).toBe('integer_above_max_value');
    expect(error.message).not.toContain('below');
    expect(error.message).toContain('<= 20');
  });

  it('a request with no usable input is a 400 naming input, and never reaches the model', async () => {
    const before = tg.simulator.requests.length;
    for (const body of [{ model: 'm' }, { model: 'm', input: [] }, { model: 'm', input: '' }, { model: 'm', input: null, instructions: 'be brief' }]) {
      const { status, body: answer } = await post(body);
      expect(status).toBe(400);
      const error = expectErrorShape(answer);
      expect(error.param).toBe('input');
      expect(error.code).toBe('missing_required_parameter');
    }
    expect(tg.simulator.requests.length).toBe(before);
  });

  it('10,000 unknown tool types in one request write one summarized warning line', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-edge-'));
    const gateway = await startGateway({ config: loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, upstream: { url: tg.simulator.url } } }), logger });
    try {
      const tools = Array.from({ length: 10_000 }, (_, i) => ({ type: `vendor_tool_${i}` }));
      const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted({ rounds: [{ text: 'ok' }] }), tools }) });
      expect(res.status).toBe(200);
      const response = (await res.json()) as Json;
      expect(response.tools).toHaveLength(10_000);
      const warnings = lines.filter((line) => line.includes('not supported'));
      console.log(`unknown tool types: 10000 declared, ${warnings.length} warning line(s)`);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('and 9995 more');
    } finally {
      await gateway.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a request without Host (found by the reliability suite)', () => {
  it('is served like any other (no route depends on Host), not refused with an empty 400', async () => {
    const result = await rawExchange('127.0.0.1', tg.gateway.port, (socket) => socket.write('GET /v1/nope HTTP/1.1\r\nConnection: close\r\n\r\n'));
    const { status, body } = parseRawResponse(result.text);
    expect(status).toBe(404);
    expect(expectErrorShape(body).code).toBe('unknown_url');
  });
});

describe('CONNECT and refused WebSocket handshakes (errors before the routes, 17)', () => {
  async function raw(request: string): Promise<{ status: number; headers: string; body: Json }> {
    const result = await rawExchange('127.0.0.1', tg.gateway.port, (socket) => socket.write(request));
    return parseRawResponse(result.text);
  }

  it('CONNECT is a 405 in the OpenAI shape (Node alone would drop the socket)', async () => {
    const { status, body } = await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(status).toBe(405);
    expect(expectErrorShape(body).code).toBe('method_not_allowed');
  });

  it('an upgrade on another path is a 404 in the OpenAI shape', async () => {
    const { status, body } = await raw('GET /v1/elsewhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    expect(status).toBe(404);
    expect(expectErrorShape(body).code).toBe('unknown_url');
  });

  it('a WebSocket handshake without a key, or with a wrong version, is a 400 in the OpenAI shape', async () => {
    const noKey = await raw('GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n');
    expect(noKey.status).toBe(400);
    expect(expectErrorShape(noKey.body).code).toBe('invalid_websocket_handshake');
    const badVersion = await raw('GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 99\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    expect(badVersion.status).toBe(400);
    expect(badVersion.headers).toContain('Sec-WebSocket-Version: 13, 8');
    expectErrorShape(badVersion.body);
  });
});
