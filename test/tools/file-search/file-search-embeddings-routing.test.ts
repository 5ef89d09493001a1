// file_search embeddings are routed by model like any other request: with two simulated upstreams
// (one serving the chat model, one the embedding model), ingestion and search embeddings go to the
// upstream that lists the embedding model; an alias renames the model on its way; a dead first
// candidate fails over to the next; a model nobody serves leaves the store keyword-only (files
// still complete) instead of failing them. Exercised with the official `openai` SDK.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../../src/app.js';
import { loadConfig, type Config, type DeepPartial } from '../../../src/config/config.js';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';

async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

const DOC = '# Tide tables\n\nThe harbour of Port Ellen floods twice a day; spring tides reach four metres.\n\n# Ferries\n\nThe ferry to Kennacraig leaves at seven.';

let chat: Simulator;
let vectors: Simulator;
let gateway: Gateway | undefined;
let dataDir: string;

beforeEach(async () => {
  chat = await startSimulator({ port: 0, modelName: 'chat-model' });
  vectors = await startSimulator({ port: 0, modelName: 'embedder' });
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-fs-routing-'));
});
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  await Promise.all([chat.close(), vectors.close()]);
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(overrides: DeepPartial<Config>): Promise<OpenAI> {
  const config = loadConfig({
    env: {},
    overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', shutdownGraceMs: 200, upstream: { maxRetries: 0, retryBaseDelayMs: 10 }, ...overrides } as DeepPartial<Config>,
  });
  gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
  return new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
}

async function ingest(client: OpenAI): Promise<string> {
  const store = await client.vectorStores.create({ name: 'harbour' });
  const file = await client.vectorStores.files.uploadAndPoll(store.id, await toFile(Buffer.from(DOC), 'harbour.md'), { pollIntervalMs: 20 });
  expect(file.status, JSON.stringify(file.last_error)).toBe('completed');
  return store.id;
}

const embeddingCalls = (sim: Simulator) => sim.requests.filter((r) => r.path === '/v1/embeddings');

describe('file_search embeddings routed by model', () => {
  it('sends ingestion and query embeddings to the upstream that lists the embedding model, none to the chat upstream', async () => {
    const client = await start({
      upstreams: [
        { name: 'chat', url: chat.url, models: ['chat-model'] },
        { name: 'vectors', url: vectors.url, models: ['text-embedding-3-small'] },
      ],
      fileSearch: { embeddingModel: 'text-embedding-3-small', pollAfterMs: 20 },
    });
    const storeId = await ingest(client);
    const afterIngest = embeddingCalls(vectors).length;
    expect(afterIngest).toBeGreaterThan(0);
    expect(embeddingCalls(vectors)[0].body).toMatchObject({ model: 'text-embedding-3-small', input: [expect.stringContaining('Port Ellen')] });

    const page = await client.vectorStores.search(storeId, { query: 'how high do spring tides reach?' });
    expect(page.data[0]?.content[0]?.text).toContain('spring tides');
    // the query was embedded too (vector side of the hybrid search), on the same upstream
    expect(embeddingCalls(vectors).length).toBe(afterIngest + 1);
    expect(embeddingCalls(chat)).toEqual([]);
    expect((await client.vectorStores.retrieve(storeId)).metadata).toEqual({});
  });

  it('follows an alias: the aliased upstream gets the model under its own name', async () => {
    const client = await start({
      upstreams: [
        { name: 'chat', url: chat.url, models: '*' },
        { name: 'vectors', url: vectors.url, models: ['bge-small'] },
      ],
      models: { 'house-embedder': { upstream: 'vectors', model: 'bge-small' } },
      fileSearch: { embeddingModel: 'house-embedder', pollAfterMs: 20 },
    });
    await ingest(client);
    expect(embeddingCalls(vectors).map((r) => r.body.model)).toEqual(['bge-small']);
    expect(embeddingCalls(chat)).toEqual([]);
  });

  it('fails over from an unreachable first candidate to the next one serving the model', async () => {
    const client = await start({
      upstreams: [
        { name: 'dead', url: await deadUrl(), models: ['text-embedding-3-small'] },
        { name: 'vectors', url: vectors.url, models: ['text-embedding-3-small'] },
        { name: 'chat', url: chat.url, models: '*' },
      ],
      fileSearch: { pollAfterMs: 20 },
    });
    const storeId = await ingest(client);
    expect(embeddingCalls(vectors).length).toBeGreaterThan(0);
    expect(embeddingCalls(chat)).toEqual([]);
    expect((await client.vectorStores.retrieve(storeId)).metadata).toEqual({});
  });

  it('goes keyword-only (files still complete, the store says why) when no upstream serves the embedding model', async () => {
    const client = await start({
      upstreams: [
        { name: 'chat', url: chat.url, models: ['chat-model'] },
        { name: 'vectors', url: vectors.url, models: ['bge-small'] },
      ],
      fileSearch: { embeddingModel: 'text-embedding-3-small', pollAfterMs: 20 },
    });
    const storeId = await ingest(client);
    expect(embeddingCalls(vectors)).toEqual([]);
    expect(embeddingCalls(chat)).toEqual([]);
    const store = await client.vectorStores.retrieve(storeId);
    expect(store.metadata?.switchyard_retrieval).toMatch(/^keyword_only: .*text-embedding-3-small/);
    const page = await client.vectorStores.search(storeId, { query: 'ferry Kennacraig' });
    expect(page.data[0]?.content[0]?.text).toContain('Kennacraig');
  });
});
