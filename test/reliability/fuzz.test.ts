// Reliability suite, part 1 (issue 9, "Done when"): thousands of generated hostile requests against
// a gateway on loopback — malformed JSON, wrong types in every field, huge and deep values, unknown
// item and tool types, bad headers, odd methods and paths, WebSocket garbage — then slow and
// unfinished requests. Expected: no crash, no 5xx for a client's fault, every error in the OpenAI
// shape, every slow request closed with 408. Seeded: SWITCHYARD_FUZZ_SEED=<n> replays a run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { CREATE_FIELDS, deepText, Fuzz, HOSTILE_URLS, ITEM_TYPES, prng, TOOL_TYPES } from './hostile-input.js';
import { rawRequest, type RawAnswer } from './raw-http.js';

const SEED = Number(process.env.SWITCHYARD_FUZZ_SEED ?? 20_261_201);
const HTTP_CASES = 2_400;
const WS_CONNECTIONS = 30;
const WS_MESSAGES_PER_CONNECTION = 12;
const CONCURRENCY = 8;
const MAX_BODY_BYTES = 1024 * 1024;
const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
/** Node looks for late requests periodically: allowed lateness past a timeout. */
const TIMEOUT_SLACK_MS = 3_000;

type Json = Record<string, any>;

/** One generated request: either through fetch (method, path, body) or raw bytes on a socket. */
interface Case {
  index: number;
  kind: string;
  method?: string;
  path?: string;
  body?: string | Uint8Array;
  headers?: Record<string, string>;
  raw?: string;
}

let simulator: Simulator;
let gateway: Gateway;
let dataDir: string;
const errorLogs: string[] = [];
const processFaults: string[] = [];
const onFault = (err: unknown) => processFaults.push(String((err as Error)?.stack ?? err));

beforeAll(async () => {
  process.on('uncaughtException', onFault);
  process.on('unhandledRejection', onFault);
  simulator = await startSimulator({ port: 0 });
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-fuzz-'));
  // error-level lines are what an operator is paged for: a client's fault must never produce one
  const logger = pino({ level: 'error' }, { write: (line: string) => void errorLogs.push(line) });
  const config = loadConfig({
    env: {},
    overrides: {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      shutdownGraceMs: 200,
      upstream: { url: simulator.url, maxRetries: 0 },
      limits: { maxBodyBytes: MAX_BODY_BYTES, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS, maxConnections: 1_024 },
    },
  });
  gateway = await startGateway({ config, logger });
});

afterAll(async () => {
  await gateway?.close();
  await simulator?.close();
  rmSync(dataDir, { recursive: true, force: true });
  process.off('uncaughtException', onFault);
  process.off('unhandledRejection', onFault);
});

// ---------------------------------------------------------------- generation

const DEEP = '"__deep__"';

function createBody(f: Fuzz): Record<string, unknown> {
  return { model: f.pick(['m', 'switchyard-sim', 'x']), input: f.pick(['hi', 'say something', [{ role: 'user', content: 'hello' }]]) };
}

function randomItem(f: Fuzz): unknown {
  const item: Record<string, unknown> = { type: f.pick(ITEM_TYPES) };
  if (f.chance(0.3)) delete item.type;
  for (const key of ['role', 'content', 'call_id', 'name', 'arguments', 'output', 'id', 'approve', 'approval_request_id', 'server_label', 'encrypted_content', 'summary', 'tools']) {
    if (f.chance(0.3)) item[key] = f.value();
  }
  if (f.chance(0.4)) item.role = f.pick(['user', 'assistant', 'system', 'developer', 'tool', 'critic', 7]);
  if (f.chance(0.4)) {
    item.content = Array.from({ length: f.int(4) }, () => ({
      type: f.pick(['input_text', 'output_text', 'input_image', 'input_file', 'refusal', 'audio', 'text', 5]),
      text: f.chance(0.7) ? f.string(40) : f.value(),
      ...(f.chance(0.3) ? { image_url: f.pick(HOSTILE_URLS) } : {}),
      ...(f.chance(0.2) ? { file_url: f.pick(HOSTILE_URLS) } : {}),
    }));
  }
  return item;
}

function randomTool(f: Fuzz): unknown {
  const tool: Record<string, unknown> = { type: f.pick(TOOL_TYPES) };
  if (f.chance(0.6)) tool.name = f.chance(0.7) ? f.pick(['get_weather', 'lookup', 'a.b', 'x'.repeat(300), '']) : f.value();
  if (f.chance(0.5)) tool.parameters = f.chance(0.5) ? { type: 'object', properties: { q: { type: f.pick(['string', 'nope', 3]) } }, required: f.value() } : f.value();
  if (tool.type === 'mcp' || f.chance(0.1)) {
    tool.server_label = f.pick(['srv', '', 'a b', 3]);
    tool.server_url = f.pick(HOSTILE_URLS);
    if (f.chance(0.3)) tool.headers = { authorization: f.pick(['Bearer x', 'bad\r\nvalue', 'nul\u0000']) };
    if (f.chance(0.3)) tool.require_approval = f.value();
    if (f.chance(0.3)) tool.allowed_tools = f.value();
  }
  for (let i = f.int(3); i > 0; i--) tool[f.pick(['description', 'strict', 'defer_loading', 'format', 'config', 'filters', f.string(6)])] = f.value();
  return tool;
}

function generateCases(seed: number): Case[] {
  const f = new Fuzz(prng(seed));
  const cases: Case[] = [];
  const generators: Array<[string, number, (index: number) => Case]> = [
    ['malformed-json', 14, (index) => {
      const valid = JSON.stringify({ ...createBody(f), tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }] });
      const body = f.pick([
        () => valid.slice(0, f.int(valid.length)),
        () => valid.replace('}', ',}'),
        () => valid + f.pick(['x', ']', '}}', ' garbage']),
        () => '\ufeff' + valid,
        () => f.pick(['', ' ', 'null', 'true', '1', '"str"', '[]', '[{}]', 'NaN', 'undefined', "{'model':'m'}", '{"model":"m","input":"hi"', '{"a":1}{"b":2}']),
        () => Buffer.from(Array.from({ length: f.int(200) + 1 }, () => f.int(256))),
        () => valid.replace('"model"', '"mod\\uZZZZel"'),
      ])();
      return { index, kind: 'malformed-json', method: 'POST', path: f.pick(['/v1/responses', '/v1/responses', '/v1/conversations', '/v1/responses/compact', '/v1/responses/input_tokens']), body };
    }],
    ['wrong-type', 30, (index) => {
      const body = createBody(f);
      for (let n = f.int(3) + 1; n > 0; n--) body[f.pick(CREATE_FIELDS)] = f.value();
      if (f.chance(0.2)) delete body.model;
      return { index, kind: 'wrong-type', method: 'POST', path: '/v1/responses', body: JSON.stringify(body) };
    }],
    ['items', 14, (index) => {
      const body = createBody(f);
      body.input = Array.from({ length: f.int(5) + 1 }, () => randomItem(f));
      if (f.chance(0.2)) body.stream = true;
      return { index, kind: 'items', method: 'POST', path: '/v1/responses', body: JSON.stringify(body) };
    }],
    ['tools', 14, (index) => {
      const body = createBody(f);
      body.tools = Array.from({ length: f.int(5) + 1 }, () => randomTool(f));
      if (f.chance(0.3)) body.tool_choice = f.chance(0.5) ? f.value() : { type: f.pick(['function', 'mcp', 'allowed_tools', 'custom']), name: f.pick(['f', 'get_weather']), tools: f.value(), mode: f.value() };
      if (f.chance(0.2)) body.stream = true;
      return { index, kind: 'tools', method: 'POST', path: '/v1/responses', body: JSON.stringify(body) };
    }],
    ['deep', 6, (index) => {
      const body = createBody(f);
      const where = f.pick(['tools', 'input', 'metadata', 'text', 'reasoning', 'tool_choice', 'context_management', 'unknown_param']);
      if (where === 'tools') body.tools = [{ type: f.pick(['function', 'vendor_thing', 'mcp']), name: 'f', parameters: '__deep__' }];
      else if (where === 'input') body.input = [{ type: 'function_call_output', call_id: 'c', output: '__deep__' }];
      else body[where] = '__deep__';
      const depth = f.pick([101, 500, 5_000, 20_000]);
      const nested = f.chance(0.5) ? deepText(depth) : deepText(depth, '[', ']');
      return { index, kind: 'deep', method: 'POST', path: f.pick(['/v1/responses', '/v1/responses', '/v1/responses/input_tokens']), body: JSON.stringify(body).replace(DEEP, nested) };
    }],
    ['huge', 4, (index) => {
      const body = createBody(f);
      switch (f.int(4)) {
        case 0:
          body[f.pick(['instructions', 'input', 'model', 'user', 'previous_response_id'])] = 'x'.repeat(f.pick([100_000, 900_000, 2_000_000]));
          break;
        case 1:
          body.input = Array.from({ length: f.pick([1_000, 20_000]) }, (_, i) => ({ role: 'user', content: `m${i}` }));
          break;
        case 2:
          body.tools = Array.from({ length: f.pick([2_000, 10_000]) }, (_, i) => ({ type: `vendor_${i}` }));
          break;
        default:
          body.metadata = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, 'v']));
      }
      return { index, kind: 'huge', method: 'POST', path: '/v1/responses', body: JSON.stringify(body) };
    }],
    ['other-endpoints', 10, (index) => {
      const id = f.pick(['resp_unknown', 'conv_unknown', 'x', '%00', '%E0%A4%A', 'a'.repeat(600), "' OR 1=1 --", '..%2F..%2Fetc', '🙂']);
      const choice = f.int(8);
      if (choice === 0) return { index, kind: 'other-endpoints', method: 'POST', path: '/v1/conversations', body: JSON.stringify({ items: f.chance(0.5) ? Array.from({ length: f.int(25) }, () => randomItem(f)) : f.value(), metadata: f.value() }) };
      if (choice === 1) return { index, kind: 'other-endpoints', method: 'POST', path: `/v1/conversations/${id}/items`, body: JSON.stringify({ items: f.value() }) };
      if (choice === 2) return { index, kind: 'other-endpoints', method: 'GET', path: `/v1/responses/${id}/input_items?limit=${f.pick(['-1', '0', '101', 'abc', '1e3', ''])}&order=${f.pick(['asc', 'desc', 'sideways', ''])}&after=${f.pick(['', 'x', '%00'])}` };
      if (choice === 3) return { index, kind: 'other-endpoints', method: f.pick(['GET', 'DELETE']), path: `/v1/responses/${id}${f.pick(['', '?stream=true', '?stream=true&starting_after=-5', '?include[]=x'])}` };
      if (choice === 4) return { index, kind: 'other-endpoints', method: 'POST', path: `/v1/responses/${id}/cancel`, body: f.chance(0.5) ? '' : '{}' };
      if (choice === 5) return { index, kind: 'other-endpoints', method: 'POST', path: f.pick(['/v1/responses/compact', '/v1/responses/input_tokens']), body: JSON.stringify({ model: f.value(), input: f.chance(0.5) ? [randomItem(f)] : f.value(), previous_response_id: f.chance(0.3) ? f.value() : undefined }) };
      if (choice === 6) return { index, kind: 'other-endpoints', method: f.pick(['GET', 'POST', 'DELETE']), path: `/v1/conversations/${id}${f.pick(['', '/items', `/items/${id}`, '/items?limit=0&order=x'])}`, body: undefined };
      return { index, kind: 'other-endpoints', method: f.pick(['GET', 'DELETE', 'POST']), path: f.pick(['/', '/v1', '/v1/', '/v2/responses', '/v1/responses/', '//v1//responses', '/v1/models/x', '/health?x=%zz', '/v1/chat/completions']) };
    }],
    ['raw-http', 8, (index) => {
      const body = JSON.stringify(createBody(f));
      const templates = [
        () => `${f.pick(['PUT', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'FOO', 'get', 'G\u0000T', 'POST\u0007'])} /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        () => `HEAD ${f.pick(['/v1/responses', '/health', '/nope'])} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        () => `GET ${f.pick(['/v1/responses/%', '/v1/responses/%00', '*', 'http://evil.example/v1/models', '/v1/responses/' + 'r'.repeat(4_000), '/v1/../../etc/passwd', '/\u00ff'])} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        () => `POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: ${f.pick(['abc', '-1', '1e3', '99999999999999999999', `${body.length}, ${body.length + 1}`])}\r\nConnection: close\r\n\r\n${body}`,
        () => `POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 5}\r\nConnection: close\r\n\r\n${body}`,
        () => `POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${f.pick(['zz\r\nabc\r\n0\r\n\r\n', '5\r\nabc\r\n0\r\n\r\n', `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`])}`,
        () => `POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${f.pick(['gzip', 'chunked, identity', 'bogus'])}\r\nConnection: close\r\n\r\n${body}`,
        () => `POST /v1/responses HTTP/1.1\r\nHost: x\r\n${f.pick(['Bad Header: 1', 'X-Nul: a\u0000b', ': empty-name', 'X-Long: ' + 'a'.repeat(20_000), 'Content-Type: text/plain', 'Content-Encoding: gzip', 'Expect: 200-ok', 'Authorization: Bearer \u00ff'])}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        () => `POST /v1/responses HTTP/1.1\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        () => `GET /health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3_000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nConnection: close\r\n\r\n`,
        () => `CONNECT ${f.pick(['example.com:443', '127.0.0.1:22', '[::1]:80', 'x'])} HTTP/1.1\r\nHost: x\r\n\r\n`,
        () =>
          `GET ${f.pick(['/v1/responses', '/v1/responses?x=1', '/ws', '/v1/conversations'])} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: ${f.pick(['websocket', 'h2c', 'WebSocket', ''])}\r\n` +
          `${f.chance(0.5) ? 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' : ''}Sec-WebSocket-Version: ${f.pick(['13', '8', '99', 'x'])}\r\n${f.chance(0.3) ? 'Sec-WebSocket-Protocol: a,,b\r\n' : ''}\r\n`,
        () => f.pick(['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', '\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003', 'GET / HTTP/9.9\r\n\r\n', 'GET /health HTTP/1.0\r\n\r\n', '\r\n\r\n\r\n', 'GET\r\n\r\n']),
      ];
      return { index, kind: 'raw-http', raw: f.pick(templates)() };
    }],
  ];
  const total = generators.reduce((sum, [, weight]) => sum + weight, 0);
  for (let index = 0; index < HTTP_CASES; index++) {
    let roll = f.int(total);
    const generator = generators.find(([, weight]) => (roll -= weight) < 0)!;
    cases.push(generator[2](index));
  }
  return cases;
}

// ---------------------------------------------------------------- checking

interface Outcome {
  status: number;
  body: string;
  contentType: string;
}

/** Why an answer breaks the contract, or null when it keeps it. */
function violation(c: Case, outcome: Outcome): string | null {
  const head = c.method === 'HEAD' || (c.raw?.startsWith('HEAD ') ?? false);
  if (outcome.status >= 500) return `status ${outcome.status} for a client's fault: ${outcome.body.slice(0, 300)}`;
  if (outcome.status === 0) return 'closed without an answer';
  if (outcome.status >= 400 && !head) {
    let parsed: Json;
    try {
      parsed = JSON.parse(outcome.body) as Json;
    } catch {
      return `error body is not JSON: ${JSON.stringify(outcome.body.slice(0, 200))}`;
    }
    const error = parsed?.error;
    const shaped =
      Object.keys(parsed).length === 1 &&
      error !== null &&
      typeof error === 'object' &&
      typeof error.message === 'string' &&
      typeof error.type === 'string' &&
      (error.param === null || typeof error.param === 'string') &&
      (error.code === null || typeof error.code === 'string') &&
      'param' in error &&
      'code' in error;
    if (!shaped) return `error not in the OpenAI shape: ${outcome.body.slice(0, 300)}`;
  }
  if (outcome.status === 200 && outcome.contentType.startsWith('text/event-stream')) {
    const events = outcome.body
      .split('\n\n')
      .map((block) => block.split('\n').find((line) => line.startsWith('data: ')))
      .filter((line): line is string => line !== undefined)
      .map((line) => JSON.parse(line.slice(6)) as Json);
    const terminal = events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(e.type));
    if (terminal.length !== 1 || events.at(-1) !== terminal[0]) return `stream without exactly one terminal event at its end (${events.map((e) => e.type).join(', ').slice(0, 300)})`;
  }
  return null;
}

async function send(c: Case, port: number): Promise<Outcome> {
  if (c.raw !== undefined) {
    const answer: RawAnswer = await rawRequest(port, Buffer.from(c.raw, 'latin1'));
    return { status: answer.status, body: answer.body, contentType: answer.headers['content-type'] ?? '' };
  }
  const res = await fetch(`http://127.0.0.1:${port}${c.path}`, {
    method: c.method,
    headers: { 'content-type': 'application/json', ...c.headers },
    body: c.method === 'GET' || c.method === 'HEAD' ? undefined : c.body,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: await res.text(), contentType: res.headers.get('content-type') ?? '' };
}

async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

function describeCase(c: Case): string {
  const what = c.raw !== undefined ? JSON.stringify(c.raw.slice(0, 160)) : `${c.method} ${c.path?.slice(0, 120)} ${typeof c.body === 'string' ? c.body.slice(0, 160) : c.body ? `<${c.body.length} bytes>` : ''}`;
  return `#${c.index} [${c.kind}] ${what}`;
}

// ---------------------------------------------------------------- the suite

describe(`hostile requests (seed ${SEED})`, () => {
  it(`${HTTP_CASES} generated HTTP requests: no crash, no 5xx, every error OpenAI-shaped`, async () => {
    const cases = generateCases(SEED);
    const byKind = new Map<string, number>();
    const byStatus = new Map<number, number>();
    const msByKind = new Map<string, number>();
    const failures: string[] = [];
    const started = Date.now();
    await inPool(cases, CONCURRENCY, async (c) => {
      byKind.set(c.kind, (byKind.get(c.kind) ?? 0) + 1);
      let outcome: Outcome;
      const sentAt = Date.now();
      try {
        outcome = await send(c, gateway.port);
      } catch (err) {
        failures.push(`${describeCase(c)} → ${(err as Error).message}`);
        return;
      } finally {
        msByKind.set(c.kind, (msByKind.get(c.kind) ?? 0) + Date.now() - sentAt);
      }
      byStatus.set(outcome.status, (byStatus.get(outcome.status) ?? 0) + 1);
      const problem = violation(c, outcome);
      if (problem) failures.push(`${describeCase(c)} → ${problem}`);
    });
    const health = await fetch(`${gateway.url}/health`);
    console.log(
      `fuzz (seed ${SEED}): ${cases.length} requests in ${Date.now() - started} ms; by kind ${JSON.stringify(Object.fromEntries(byKind))}; ms by kind ${JSON.stringify(Object.fromEntries(msByKind))}; ` +
        `by status ${JSON.stringify(Object.fromEntries([...byStatus].sort((a, b) => a[0] - b[0])))}; ${failures.length} violations; ` +
        `5xx: ${[...byStatus].filter(([s]) => s >= 500).reduce((n, [, count]) => n + count, 0)}; error log lines: ${errorLogs.length}; process faults: ${processFaults.length}`,
    );
    if (failures.length > 0) console.log(failures.slice(0, 20).join('\n'));
    expect(failures).toEqual([]);
    expect(health.status).toBe(200);
    expect(processFaults).toEqual([]);
    expect(errorLogs).toEqual([]);
  }, 240_000);

  it(`WebSocket garbage (${WS_CONNECTIONS} connections × ${WS_MESSAGES_PER_CONNECTION} messages): each message one answer, errors shaped, never a 5xx`, async () => {
    const f = new Fuzz(prng(SEED + 1));
    const failures: string[] = [];
    let sent = 0;
    let errorEvents = 0;
    let responses = 0;
    let closedByGateway = 0;
    const started = Date.now();
    await inPool(Array.from({ length: WS_CONNECTIONS }, (_, i) => i), 4, async (connection) => {
      const ws = new WebSocket(`ws://127.0.0.1:${gateway.port}/v1/responses`);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      let answered = 0;
      let expected = 0;
      let closeCode = 0;
      const closed = new Promise<void>((resolve) => ws.once('close', (code) => ((closeCode = code), resolve())));
      ws.on('error', () => undefined);
      ws.on('message', (data) => {
        let event: Json;
        try {
          event = JSON.parse(String(data)) as Json;
        } catch {
          failures.push(`ws #${connection}: a message that is not JSON`);
          return;
        }
        if (event.type === 'error') {
          errorEvents++;
          answered++;
          const e = event.error;
          if (!(typeof event.status === 'number' && event.status < 500)) failures.push(`ws #${connection}: error event with status ${event.status}: ${JSON.stringify(event).slice(0, 300)}`);
          if (!(e && typeof e.message === 'string' && typeof e.type === 'string' && typeof e.code === 'string' && 'param' in e)) failures.push(`ws #${connection}: error event not shaped: ${JSON.stringify(event).slice(0, 300)}`);
        } else if (['response.completed', 'response.failed', 'response.incomplete'].includes(event.type)) {
          responses++;
          answered++;
        }
      });
      let oversized = false;
      for (let m = 0; m < WS_MESSAGES_PER_CONNECTION; m++) {
        const params = { type: 'response.create', model: 'm', input: 'hi', store: f.chance(0.5) };
        const message = f.pick<() => string | Buffer>([
          () => f.string(60),
          () => Buffer.from(Array.from({ length: f.int(100) + 1 }, () => f.int(256))),
          () => JSON.stringify(f.value()),
          () => JSON.stringify({ ...params, type: f.pick(['response.cancel', 'session.update', '', 7, null]) }),
          () => JSON.stringify({ ...params, [f.pick(CREATE_FIELDS)]: f.value() }),
          () => JSON.stringify({ ...params, input: [randomItem(f)], tools: [randomTool(f)] }),
          () => JSON.stringify({ ...params, background: true }),
          () => JSON.stringify({ ...params, previous_response_id: f.pick(['resp_nope', '', 'x'.repeat(1000)]) }),
          () => JSON.stringify({ ...params, tools: '__deep__' }).replace(DEEP, deepText(f.pick([150, 5_000]))),
          () => JSON.stringify(params),
        ])();
        if (f.chance(0.01)) {
          // larger than maxMessageBytes: the gateway closes the connection (1009) — that is its answer
          oversized = true;
          ws.send('x'.repeat(MAX_BODY_BYTES + 10));
          sent++;
          break;
        }
        ws.send(message);
        sent++;
        expected++;
      }
      const deadline = Date.now() + 30_000;
      while (!oversized && answered < expected && Date.now() < deadline && ws.readyState === WebSocket.OPEN) await new Promise((r) => setTimeout(r, 10));
      if (!oversized && answered !== expected) failures.push(`ws #${connection}: ${answered} answers for ${expected} messages`);
      if (ws.readyState === WebSocket.OPEN) ws.close();
      await closed;
      if (oversized) {
        closedByGateway++;
        if (closeCode !== 1009) failures.push(`ws #${connection}: an oversized frame closed with ${closeCode}, expected 1009`);
      }
    });
    console.log(
      `websocket fuzz (seed ${SEED + 1}): ${WS_CONNECTIONS} connections, ${sent} messages in ${Date.now() - started} ms; ${errorEvents} error events, ${responses} responses, ` +
        `${closedByGateway} closed for an oversized frame; ${failures.length} violations; process faults: ${processFaults.length}`,
    );
    if (failures.length > 0) console.log(failures.slice(0, 20).join('\n'));
    expect(failures).toEqual([]);
    expect(processFaults).toEqual([]);
    expect(errorLogs).toEqual([]);
  }, 120_000);
});

describe('slow and unfinished requests', () => {
  it(`slowloris headers and partial bodies are all answered 408 and closed within the timeout`, async () => {
    const f = new Fuzz(prng(SEED + 2));
    const SLOW_HEADERS = 120;
    const PARTIAL_BODIES = 60;
    const STALLED_AFTER_HEADERS = 20;
    const started = Date.now();
    const drip = (write: (chunk: string) => boolean) => {
      write('POST /v1/responses HTTP/1.1\r\nHost: x\r\n');
      const timer = setInterval(() => {
        if (!write(`X-Drip-${f.int(1e6)}: 1\r\n`)) clearInterval(timer);
      }, 200);
      setTimeout(() => clearInterval(timer), 20_000).unref();
    };
    const partial = (write: (chunk: string) => boolean) => {
      write('POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"model":"m","input":"');
      const timer = setInterval(() => {
        if (!write('a')) clearInterval(timer);
      }, 300);
      setTimeout(() => clearInterval(timer), 20_000).unref();
    };
    const stalled = (write: (chunk: string) => boolean) => void write('GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Half: ');
    const all = [
      ...Array.from({ length: SLOW_HEADERS }, () => ({ kind: 'slow headers', limit: HEADERS_TIMEOUT_MS, run: rawRequest(gateway.port, drip, 20_000) })),
      ...Array.from({ length: PARTIAL_BODIES }, () => ({ kind: 'partial body', limit: REQUEST_TIMEOUT_MS, run: rawRequest(gateway.port, partial, 20_000) })),
      ...Array.from({ length: STALLED_AFTER_HEADERS }, () => ({ kind: 'stalled headers', limit: HEADERS_TIMEOUT_MS, run: rawRequest(gateway.port, stalled, 20_000) })),
    ];
    // the gateway keeps serving while they hang
    const normal = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'still here' }) });
    expect(normal.status).toBe(200);
    const failures: string[] = [];
    let worstMs = 0;
    for (const entry of all) {
      const answer = await entry.run.catch((err: Error) => err);
      if (answer instanceof Error) {
        failures.push(`${entry.kind}: ${answer.message}`);
        continue;
      }
      worstMs = Math.max(worstMs, answer.elapsedMs);
      if (answer.status !== 408) failures.push(`${entry.kind}: status ${answer.status}`);
      else if (JSON.parse(answer.body).error?.code !== 'request_timeout') failures.push(`${entry.kind}: body ${answer.body.slice(0, 200)}`);
      if (answer.elapsedMs > entry.limit + TIMEOUT_SLACK_MS) failures.push(`${entry.kind}: closed after ${answer.elapsedMs} ms (limit ${entry.limit} ms)`);
    }
    console.log(
      `slow requests: ${SLOW_HEADERS} slowloris headers, ${PARTIAL_BODIES} partial bodies, ${STALLED_AFTER_HEADERS} stalled header lines; ` +
        `${all.length - failures.length} answered 408 and closed in time (slowest ${worstMs} ms; timeouts ${HEADERS_TIMEOUT_MS}/${REQUEST_TIMEOUT_MS} ms) in ${Date.now() - started} ms; ${failures.length} violations`,
    );
    expect(failures).toEqual([]);
  }, 60_000);
});
