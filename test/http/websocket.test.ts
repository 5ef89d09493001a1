// WebSocket mode of the Responses API (src/http/websocket.ts) against the simulator.
// attachResponsesWebSocket is attached to a server of the test's own, in front of an Engine built
// as src/app.ts builds it, on the same SQLite folder as a regular gateway (so stored responses
// are visible over HTTP).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { Engine } from '../../src/engine/turn.js';
import { attachResponsesWebSocket, type ResponsesWebSocket } from '../../src/http/websocket.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { DeclareContext } from '../../src/tools/handler.js';
import { ChatCompletionsUpstream } from '../../src/upstream/chat-completions.js';
import { checkStreamInvariants, validateAgainst, validateStreamEvent } from '../helpers/spec.js';

type Ev = Record<string, any>;

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);
const MODEL = 'switchyard-sim';

let sim: Simulator;
let gateway: Gateway;
let dataDir: string;
let store: SqliteResponseStore;
let upstream: ChatCompletionsUpstream;
let wsServer: Server;
let attached: ResponsesWebSocket;
let wsUrl: string;
let httpBase: string;

/** Builds the engine as src/app.ts does (no gateway-executed tools needed here). */
function buildEngine(config: ReturnType<typeof loadConfig>, url: string): { engine: Engine; upstream: ChatCompletionsUpstream; store: SqliteResponseStore } {
  const upstream = new ChatCompletionsUpstream({ ...config.upstream, baseUrl: url }, config.upstream.reasoningReplay);
  const store = new SqliteResponseStore(config.dataDir);
  const declare: DeclareContext = { executionFor: () => undefined, logOnce: () => {} };
  const log = pino({ level: 'silent' });
  const engine = new Engine(upstream, store, declare, { maxToolRounds: config.tools.maxToolRounds, maxConcurrentGatewayCalls: config.tools.maxConcurrentGatewayCalls }, log);
  return { engine, upstream, store };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A user message carrying a simulator script. */
const scripted = (script: unknown, text = 'go'): string => `${text}\n#sim ${JSON.stringify(script)}`;
const say = (text: string) => scripted({ rounds: [{ text }] });

/** A ws client that queues every frame it receives (parsed) for `next()`. */
class Client {
  readonly ws: WebSocket;
  private readonly frames: Ev[] = [];
  private readonly waiters: Array<(ev: Ev) => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;

  constructor(url = wsUrl, options: ConstructorParameters<typeof WebSocket>[2] = {}) {
    this.ws = new WebSocket(url, { headers: { authorization: 'Bearer test-key' }, ...options });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) throw new Error('the gateway sent a binary frame');
      const ev = JSON.parse(data.toString()) as Ev;
      const waiter = this.waiters.shift();
      if (waiter) waiter(ev);
      else this.frames.push(ev);
    });
  }

  static async open(url = wsUrl): Promise<Client> {
    const client = new Client(url);
    await client.opened;
    return client;
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  create(params: Record<string, unknown>): void {
    this.send({ type: 'response.create', model: MODEL, ...params });
  }

  next(timeoutMs = 5_000): Promise<Ev> {
    const queued = this.frames.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no frame within timeout')), timeoutMs);
      this.waiters.push((ev) => {
        clearTimeout(timer);
        resolve(ev);
      });
    });
  }

  /** Frames up to and including the next terminal event (`error` included). */
  async readResponse(): Promise<Ev[]> {
    const events: Ev[] = [];
    for (;;) {
      const ev = await this.next();
      events.push(ev);
      if (TERMINAL.has(ev.type)) return events;
    }
  }

  pending(): number {
    return this.frames.length;
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    await this.closed;
  }
}

/** A completed stream: every event valid per the spec, the stream invariants hold. */
function expectGoodStream(events: Ev[]): void {
  for (const ev of events) expect(validateStreamEvent(ev)).toEqual([]);
  expect(checkStreamInvariants(events)).toEqual([]);
  expect(events[0].sequence_number).toBe(0);
  expect(events.at(-1)!.type).toBe('response.completed');
}

function expectErrorEvent(ev: Ev, status: number, code: string, param: string | null): void {
  expect(validateAgainst('WebSocketErrorEvent', ev)).toEqual([]);
  expect(ev).toMatchObject({ type: 'error', sequence_number: 0, status, error: { code, param } });
  expect(typeof ev.error.message).toBe('string');
}

const outputText = (events: Ev[]): string =>
  (events.at(-1)!.response.output as Ev[])
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content as Ev[])
    .map((part) => part.text)
    .join('');

/** The messages of the simulator's most recent chat request whose last user message contains `marker`. */
function simRequestWith(marker: string): Ev {
  const found = [...sim.requests].reverse().find((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
  if (!found) throw new Error(`no simulator request mentions ${marker}`);
  return found.body;
}

async function getStored(id: string): Promise<Response> {
  return fetch(`${httpBase}/v1/responses/${id}`);
}

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-ws-test-'));
  const config = loadConfig({
    env: {},
    overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', shutdownGraceMs: 200, upstream: { url: sim.url, maxRetries: 1, retryBaseDelayMs: 10 } },
  });
  gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
  httpBase = gateway.url;
  const built = buildEngine(config, sim.url);
  ({ upstream, store } = built);
  const engine = built.engine;
  wsServer = createServer((_req, res) => {
    res.writeHead(404).end();
  });
  attached = attachResponsesWebSocket(wsServer, { engine, store, log: pino({ level: 'silent' }), maxMessageBytes: config.limits.maxBodyBytes });
  const port = await listen(wsServer);
  wsUrl = `ws://127.0.0.1:${port}/v1/responses`;
});

afterAll(async () => {
  await attached?.close();
  await new Promise<void>((resolve) => wsServer?.close(() => resolve()));
  await upstream?.close();
  await store?.close();
  await gateway?.close();
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('WebSocket mode: responses in sequence', () => {
  it('answers three response.create on one socket, each a complete stream numbered from 0', async () => {
    const client = await Client.open();
    const streams: Ev[][] = [];
    for (const word of ['one', 'two', 'three']) {
      client.create({ input: say(`answer ${word}`) });
      streams.push(await client.readResponse());
    }
    for (const events of streams) expectGoodStream(events);
    expect(streams.map(outputText)).toEqual(['answer one', 'answer two', 'answer three']);
    const ids = streams.map((events) => events[0].response.id as string);
    expect(new Set(ids).size).toBe(3);
    // `stream` is implied: the echoed response is the streaming one; stored by default
    const stored = await getStored(ids[1]);
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as Ev).status).toBe('completed');
    expect(client.pending()).toBe(0);
    await client.close();
  });

  it('queues a response.create sent while another runs: back to back, answered in order, never interleaved', async () => {
    const client = await Client.open();
    client.create({ input: scripted({ rounds: [{ text: 'slow first answer', delay_ms: 30 }] }) });
    client.create({ input: say('second answer') });
    client.create({ input: say('third answer') });
    const first = await client.readResponse();
    const second = await client.readResponse();
    const third = await client.readResponse();
    for (const events of [first, second, third]) expectGoodStream(events);
    expect([first, second, third].map(outputText)).toEqual(['slow first answer', 'second answer', 'third answer']);
    // the second started only after the first had ended
    expect(second[0].response.created_at).toBeGreaterThanOrEqual(first.at(-1)!.response.created_at);
    await client.close();
  });

  it('ignores a stream field and works with the OpenAI SDK WebSocket client', async () => {
    const client = await Client.open();
    client.create({ input: say('streamed anyway'), stream: false, stream_options: { include_obfuscation: false } });
    const events = await client.readResponse();
    expectGoodStream(events);
    expect(outputText(events)).toBe('streamed anyway');
    await client.close();

    const openai = new OpenAI({ baseURL: wsUrl.replace(/^ws:/, 'http:').replace(/\/responses$/, ''), apiKey: 'test-key' });
    const sdk = new ResponsesWS(openai);
    const received: Ev[] = [];
    const done = new Promise<Ev>((resolve, reject) => {
      sdk.on('event', (ev: Ev) => {
        received.push(ev);
        if (ev.type === 'response.completed') resolve(ev);
      });
      sdk.on('error', reject);
    });
    sdk.send({ type: 'response.create', model: MODEL, input: say('via the sdk') } as never);
    const completed = await done;
    expect(completed.response.output[0].content[0].text).toBe('via the sdk');
    expect(checkStreamInvariants(received)).toEqual([]);
    sdk.close();
  });
});

describe('WebSocket mode: previous_response_id', () => {
  it('continues from a store:false turn on the same socket; another socket does not know it', async () => {
    const client = await Client.open();
    client.create({ input: say('the secret is marmalade'), store: false });
    const first = await client.readResponse();
    expectGoodStream(first);
    const firstId = first[0].response.id as string;
    expect((await getStored(firstId)).status).toBe(404);

    client.create({ input: say('follow-up-42'), previous_response_id: firstId, store: false });
    const second = await client.readResponse();
    expectGoodStream(second);
    expect(second[0].response.previous_response_id).toBe(firstId);
    const messages = simRequestWith('follow-up-42').messages as Ev[];
    const text = JSON.stringify(messages);
    expect(text).toContain('the secret is marmalade'); // turn 1's user message
    expect(messages.some((m) => m.role === 'assistant' && JSON.stringify(m.content).includes('the secret is marmalade'))).toBe(true); // turn 1's answer

    // a chain of cached turns: the third continues from the second, which continues from the first
    const secondId = second[0].response.id as string;
    client.create({ input: say('third-turn-43'), previous_response_id: secondId, store: false });
    expectGoodStream(await client.readResponse());
    const third = JSON.stringify(simRequestWith('third-turn-43').messages);
    expect(third).toContain('the secret is marmalade');
    expect(third).toContain('follow-up-42');

    // a new socket: the id is unknown, the socket stays usable
    const other = await Client.open();
    other.create({ input: say('nope'), previous_response_id: firstId });
    const [error] = await other.readResponse();
    expectErrorEvent(error, 404, 'previous_response_not_found', 'previous_response_id');
    other.create({ input: say('still works') });
    const after = await other.readResponse();
    expectGoodStream(after);
    expect(outputText(after)).toBe('still works');
    await other.close();
    await client.close();
  });

  it('walks a chain from the cache into the store (a stored turn made over HTTP)', async () => {
    const http = await fetch(`${httpBase}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: say('http-turn-zero') }),
    });
    expect(http.status).toBe(200);
    const zero = (await http.json()) as Ev;

    const client = await Client.open();
    client.create({ input: say('ws-turn-one'), previous_response_id: zero.id, store: false });
    const one = await client.readResponse();
    expectGoodStream(one);
    client.create({ input: say('ws-turn-two'), previous_response_id: one[0].response.id });
    expectGoodStream(await client.readResponse());
    const seen = JSON.stringify(simRequestWith('ws-turn-two').messages);
    expect(seen).toContain('http-turn-zero');
    expect(seen).toContain('ws-turn-one');
    await client.close();
  });

  it('a long conversation on one socket sends the model what the same conversation over HTTP sends', async () => {
    const weather = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
    const turns = 30;
    /** The input of turn `i`; every fifth turn the model calls the function, and the next answers it. */
    const inputOf = (i: number, last: Ev | undefined, tag: string): unknown => {
      const call = last && (last.output as Ev[]).find((o) => o.type === 'function_call');
      if (i % 5 === 4 && call) return [{ type: 'function_call_output', call_id: call.call_id, output: `sunny ${i}` }];
      if (i % 5 === 3) return scripted({ rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: `City ${i}` } }] }] }, `q${i}`);
      return `${tag} question ${i} "quoted" ✓`;
    };
    // over the socket, store:false: the chain lives in the connection's cache
    const client = await Client.open();
    let last: Ev | undefined;
    for (let i = 0; i < turns; i++) {
      client.create({ instructions: 'Be brief.', tools: [weather], input: inputOf(i, last, 'conv'), previous_response_id: last?.id, store: false });
      const events = await client.readResponse();
      expectGoodStream(events);
      last = events.at(-1)!.response;
    }
    client.create({ instructions: 'Be brief.', tools: [weather], input: 'ws-final-question', previous_response_id: last!.id, store: false });
    expectGoodStream(await client.readResponse());
    const overSocket = simRequestWith('ws-final-question').messages as Ev[];
    await client.close();
    // over HTTP, stored: the chain comes from the store
    let previous: Ev | undefined;
    for (let i = 0; i < turns; i++) {
      const res = await fetch(`${httpBase}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, instructions: 'Be brief.', tools: [weather], input: inputOf(i, previous, 'conv'), previous_response_id: previous?.id }) });
      expect(res.status).toBe(200);
      previous = (await res.json()) as Ev;
    }
    const final = await fetch(`${httpBase}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, instructions: 'Be brief.', tools: [weather], input: 'http-final-question', previous_response_id: previous!.id }) });
    expect(final.status).toBe(200);
    const overHttp = simRequestWith('http-final-question').messages as Ev[];
    // the same conversation, but for the call ids the model minted and the last question
    const same = (messages: Ev[]) => JSON.parse(JSON.stringify(messages).replace(/chatcmpl-tool-[0-9a-f]+/g, 'chatcmpl-tool-').replace(/(ws|http)-final-question/g, 'final'));
    expect(same(overSocket)).toEqual(same(overHttp));
    expect(overSocket.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['sunny 4', 'sunny 9', 'sunny 14', 'sunny 19', 'sunny 24', 'sunny 29']);
    expect(overSocket[0]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('does not cache a failed turn', async () => {
    const client = await Client.open();
    client.create({ input: scripted({ rounds: [{ text: 'a b c d', error_after_chunks: 2 }] }), store: false });
    const failed = await client.readResponse();
    expect(failed.at(-1)!.type).toBe('response.failed');
    for (const ev of failed) expect(validateStreamEvent(ev)).toEqual([]);
    client.create({ input: say('x'), previous_response_id: failed[0].response.id });
    const [error] = await client.readResponse();
    expectErrorEvent(error, 404, 'previous_response_not_found', 'previous_response_id');
    await client.close();
  });
});

describe('WebSocket mode: errors keep the socket open', () => {
  it('answers a missing model with an error event (param model), then serves the next turn', async () => {
    const client = await Client.open();
    client.send({ type: 'response.create', input: 'hi' });
    const [error] = await client.readResponse();
    expectErrorEvent(error, 400, 'missing_required_parameter', 'model');
    expect(error.error.type).toBe('invalid_request_error');
    client.create({ input: say('recovered') });
    expect(outputText(await client.readResponse())).toBe('recovered');
    await client.close();
  });

  it('answers an upstream 400 before the stream starts with an error event', async () => {
    const client = await Client.open();
    client.create({ input: scripted({ rounds: [{ status: 400, error: 'context too long' }] }) });
    const events = await client.readResponse();
    expect(events).toHaveLength(1);
    expectErrorEvent(events[0], 400, 'upstream_rejected', null);
    expect(events[0].error.message).toContain('context too long');
    client.create({ input: say('after the upstream error') });
    expect(outputText(await client.readResponse())).toBe('after the upstream error');
    await client.close();
  });

  it('answers invalid JSON, a non-object, an unknown type and background with error events', async () => {
    const client = await Client.open();
    client.send('{not json');
    expectErrorEvent(await client.next(), 400, 'invalid_json', null);
    client.send('[1,2]');
    expectErrorEvent(await client.next(), 400, 'invalid_type', null);
    client.send({ type: 'session.update', model: MODEL });
    expectErrorEvent(await client.next(), 400, 'invalid_value', 'type');
    client.send({ model: MODEL, input: 'no type' });
    expectErrorEvent(await client.next(), 400, 'invalid_value', 'type');
    client.create({ input: 'hi', background: true });
    expectErrorEvent(await client.next(), 400, 'unsupported_parameter', 'background');
    client.create({ input: say('fine after all that') });
    const events = await client.readResponse();
    expectGoodStream(events);
    expect(outputText(events)).toBe('fine after all that');
    await client.close();
  });

  it('keeps error events in order with queued responses', async () => {
    const client = await Client.open();
    client.create({ input: scripted({ rounds: [{ text: 'first in line', delay_ms: 20 }] }) });
    client.send('garbage');
    client.create({ input: say('last in line') });
    const first = await client.readResponse();
    expectGoodStream(first);
    expectErrorEvent(await client.next(), 400, 'invalid_json', null);
    const last = await client.readResponse();
    expectGoodStream(last);
    expect([outputText(first), outputText(last)]).toEqual(['first in line', 'last in line']);
    await client.close();
  });
});

describe('WebSocket mode: connection lifecycle', () => {
  it('closing the socket mid-stream aborts the upstream request and stores the turn as failed', async () => {
    const client = await Client.open();
    client.create({ input: scripted({ rounds: [{ text: 'this will never finish', hang_after_chunks: 2 }] }) });
    const created = await client.next();
    expect(created.type).toBe('response.created');
    const id = created.response.id as string;
    const aborted = sim.waitForAbort(5_000);
    client.ws.close();
    await aborted;
    let stored: Ev | undefined;
    for (let i = 0; i < 50; i++) {
      stored = (await (await getStored(id)).json()) as Ev;
      if (stored.status !== 'in_progress') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(stored).toMatchObject({ status: 'failed', error: { code: 'client_disconnected' } });
  });

  it('a client that stops reading slows the upstream read (backpressure) and then gets everything', async () => {
    const client = await Client.open();
    const words = 100_000;
    const marker = 'backpressure-marker';
    client.create({ input: scripted({ rounds: [{ text: 'w '.repeat(words).trim() }] }, marker), store: false });
    const created = await client.next();
    expect(created.type).toBe('response.created');
    client.ws.pause();
    const record = () => [...sim.requests].reverse().find((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
    // while the client reads nothing the upstream stream cannot finish: the gateway stopped reading it
    await new Promise((r) => setTimeout(r, 1_000));
    expect(record()).toBeDefined();
    expect(record()!.finished).toBe(false);
    client.ws.resume();
    const rest = await client.readResponse();
    const events = [created, ...rest];
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(events.filter((e) => e.type === 'response.output_text.delta')).toHaveLength(words);
    expect(events.every((e, i) => e.sequence_number === i)).toBe(true);
    expect(record()!.finished).toBe(true);
    await client.close();
  }, 30_000);

  it('refuses upgrades on other paths with 404', async () => {
    const port = new URL(wsUrl).port;
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/chat`);
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => reject(new Error('upgrade accepted')));
      ws.on('error', () => {});
    });
    expect(status).toBe(404);
  });

  it('terminates a connection that stops answering pings', async () => {
    const server = createServer();
    const own = buildEngine(loadConfig({ env: {}, overrides: { dataDir, upstream: { url: sim.url } } }), sim.url);
    const handle = attachResponsesWebSocket(server, { engine: own.engine, store: own.store, log: pino({ level: 'silent' }), maxMessageBytes: 1024, pingIntervalMs: 50 });
    const port = await listen(server);
    const responsive = new Client(`ws://127.0.0.1:${port}/v1/responses`);
    const silent = new Client(`ws://127.0.0.1:${port}/v1/responses`, { autoPong: false });
    await Promise.all([responsive.opened, silent.opened]);
    const { code } = await silent.closed;
    expect(code).toBe(1006); // terminated, no close frame
    expect(responsive.ws.readyState).toBe(WebSocket.OPEN);

    // a frame over maxMessageBytes closes the connection (1009)
    responsive.send({ type: 'response.create', model: MODEL, input: 'x'.repeat(2048) });
    expect((await responsive.closed).code).toBe(1009);

    // close() says 1001 to the remaining connections
    const last = new Client(`ws://127.0.0.1:${port}/v1/responses`);
    await last.opened;
    await handle.close();
    expect((await last.closed).code).toBe(1001);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await own.upstream.close();
    await own.store.close();
  });
});
