import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig, type Config, type DeepPartial } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';

// Two simulated upstreams serving different models, a dead one, and a raw SSE server whose exact
// bytes the chat-completions pass-through must deliver unchanged.

/** An SSE body split at awkward places (mid-line, mid-UTF-8 sequence) to prove byte transparency. */
const RAW_STREAM = Buffer.from(
  'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"h\u00e9llo \u{1F600}"}}]}\n\n' +
    ': a comment the gateway must not drop\n\n' +
    'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' +
    'data: [DONE]\n\n',
  'utf8',
);

interface RawUpstream {
  url: string;
  server: Server;
  seen: Array<{ path: string; body: string; auth: string | undefined }>;
}

async function startRawUpstream(): Promise<RawUpstream> {
  const seen: RawUpstream['seen'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      seen.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), auth: req.headers.authorization });
      if (req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'raw-model', object: 'model', created: 1, owned_by: 'raw' }] }));
      } else if (req.url === '/v1/embeddings') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5] }], model: 'raw-embed', usage: { prompt_tokens: 1, total_tokens: 1 } }));
      } else {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // uneven pieces, with pauses, so the gateway sees several network chunks
        for (const [from, to] of [[0, 7], [7, 60], [60, 75], [75, RAW_STREAM.length]]) {
          res.write(RAW_STREAM.subarray(from, to));
          await new Promise((r) => setTimeout(r, 20));
        }
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, seen };
}

/** A port nothing listens on: connection refused, at once. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

let alpha: Simulator;
let beta: Simulator;
let raw: RawUpstream;
let gateway: Gateway;
let dataDir: string;
let client: OpenAI;

beforeAll(async () => {
  alpha = await startSimulator({ port: 0, modelName: 'alpha-7b' });
  beta = await startSimulator({ port: 0, modelName: 'beta-13b' });
  raw = await startRawUpstream();
  const dead = await deadUrl();
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-routing-'));
  const overrides: DeepPartial<Config> = {
    port: 0,
    host: '127.0.0.1',
    dataDir,
    logLevel: 'silent',
    shutdownGraceMs: 200,
    upstream: { maxRetries: 0, retryBaseDelayMs: 10 },
    upstreams: [
      { name: 'dead', url: dead, models: ['alpha-7b', 'shared'] },
      { name: 'alpha', url: alpha.url, models: ['alpha-7b', 'shared'] },
      { name: 'beta', url: beta.url, models: ['beta-13b'] },
      { name: 'raw', url: raw.url, models: ['raw-model', 'raw-embed'] },
    ],
    models: {
      fast: { upstream: 'beta', model: 'beta-13b' },
      resilient: { upstream: 'dead', model: 'gone', fallbacks: [{ upstream: 'beta', model: 'beta-13b' }] },
    },
  };
  gateway = await startGateway({ config: loadConfig({ env: {}, overrides }), logger: pino({ level: 'silent' }) });
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.allSettled([alpha?.close(), beta?.close(), new Promise((r) => raw?.server.close(r))]);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('many upstreams, routed by model', () => {
  it('sends each model to the upstream that serves it', async () => {
    const b = await client.responses.create({ model: 'beta-13b', input: 'hi' });
    expect(b.status).toBe('completed');
    expect(beta.requests.at(-1)!.body.model).toBe('beta-13b');
    const before = alpha.requests.length;
    // listed first on a dead upstream: the connection failure moves on to the next that serves it
    const a = await client.responses.create({ model: 'alpha-7b', input: 'hi', stream: false });
    expect(a.status).toBe('completed');
    expect(a.model).toBe('alpha-7b');
    expect(alpha.requests.length).toBe(before + 1);
  });

  it('resolves aliases, and falls back from a dead upstream to the alias fallback', async () => {
    const fast = await client.responses.create({ model: 'fast', input: 'hi' });
    expect(fast.status).toBe('completed');
    expect(beta.requests.at(-1)!.body.model).toBe('beta-13b');
    const from = beta.requests.length;
    const stream = await client.responses.create({ model: 'resilient', input: 'hello there', stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe('response.completed');
    expect(beta.requests.length).toBe(from + 1);
    expect(beta.requests.at(-1)!.body.model).toBe('beta-13b');
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const err = await client.responses.create({ model: 'nope', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const passthrough = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'nope', messages: [] }) });
    expect(passthrough.status).toBe(404);
    expect(((await passthrough.json()) as any).error.code).toBe('model_not_found');
  });

  it('lists every model of every upstream, aliases included', async () => {
    const ids = (await client.models.list()).data.map((m) => m.id).sort();
    expect(ids).toEqual(['alpha-7b', 'beta-13b', 'fast', 'raw-embed', 'raw-model', 'resilient', 'shared']);
  });
});

describe('pass-through routes', () => {
  it('streams /v1/chat/completions byte for byte', async () => {
    const body = JSON.stringify({ model: 'raw-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.equals(RAW_STREAM)).toBe(true);
    // the request body reached the upstream unchanged too
    expect(raw.seen.at(-1)).toMatchObject({ path: '/v1/chat/completions', body });
  });

  it('streams chat completions from a simulator through the OpenAI SDK, with an alias renamed', async () => {
    const stream = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'hi there' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(beta.requests.at(-1)!.body.model).toBe('beta-13b');
  });

  it('forwards /v1/embeddings by model', async () => {
    const result = await client.embeddings.create({ model: 'raw-embed', input: 'hello', encoding_format: 'float' });
    expect(result.data[0].embedding).toEqual([0.25, -0.5]);
    expect(raw.seen.at(-1)!.path).toBe('/v1/embeddings');
  });

  it('rejects a body without a model with 400', async () => {
    const response = await fetch(`${gateway.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input":"x"}' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).error.param).toBe('model');
  });
});
