// `rewrite_query` on a direct vector store search: the rewritten query is what is searched and what
// `search_query` shows (as OpenAI's). Without `fileSearch.rewriteModel`, a deterministic keyword
// rewrite; with it, the model (routed like any model) writes the query, and a failing model falls
// back to the keyword rewrite. Exercised with the official `openai` SDK.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../../src/app.js';
import { loadConfig, type Config, type DeepPartial } from '../../../src/config/config.js';
import { keywordRewrite } from '../../../src/retrieval/query-rewrite.js';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';

const DOC = '# Offices\n\nThe main office building is 112 metres high and has 31 floors.\n\n# Complaints\n\nFile a service complaint through the portal; it is answered within two days.';

describe('keyword rewrite', () => {
  it('keeps the content words in order, drops filler, stopwords, question words and repeats', () => {
    expect(keywordRewrite("I'd like to know the height of the main office building.")).toBe('height main office building');
    expect(keywordRewrite('How do I file a complaint about a service issue?')).toBe('file complaint service issue');
    expect(keywordRewrite('What are the safety regulations for transporting hazardous materials?')).toBe('safety regulations transporting hazardous materials');
    expect(keywordRewrite('Can you please tell me the return policy, the RETURN policy?')).toBe('return policy');
    // negations carry meaning and stay
    expect(keywordRewrite('Which trails are not open in winter?')).toBe('trails not open winter');
    // nothing left: the question as given
    expect(keywordRewrite('  What is it?  ')).toBe('What is it?');
  });
});

let gateway: Gateway | undefined;
let simulator: Simulator | undefined;
let raw: Server | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await gateway?.close();
  await simulator?.close();
  if (raw) await new Promise((resolve) => raw!.close(resolve));
  gateway = simulator = raw = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(overrides: DeepPartial<Config>): Promise<OpenAI> {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-rewrite-'));
  dirs.push(dataDir);
  const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', shutdownGraceMs: 200, upstream: { maxRetries: 0 }, ...overrides } as DeepPartial<Config> });
  gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
  return new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
}

/** The raw search page (the SDK's page object hides `search_query`). */
async function search(client: OpenAI, storeId: string, body: OpenAI.VectorStores.VectorStoreSearchParams): Promise<{ search_query: string[]; data: Array<{ content: Array<{ text: string }> }> }> {
  return (await (await client.vectorStores.search(storeId, body).asResponse()).json()) as { search_query: string[]; data: Array<{ content: Array<{ text: string }> }> };
}

async function storeWithDoc(client: OpenAI): Promise<string> {
  const store = await client.vectorStores.create({ name: 'campus' });
  const file = await client.vectorStores.files.uploadAndPoll(store.id, await toFile(Buffer.from(DOC), 'campus.md'), { pollIntervalMs: 20 });
  expect(file.status).toBe('completed');
  return store.id;
}

/** A chat-completions upstream for the rewrite model: answers `reply(body)` with `status`. */
async function rewriteUpstream(status: number, content: string, seen: any[]): Promise<string> {
  raw = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ path: req.url, body: JSON.parse(body) });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? JSON.stringify({ id: 'c1', object: 'chat.completion', created: 0, model: 'rewriter', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] }) : '{"error":{"message":"boom"}}');
    });
  });
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
}

describe('rewrite_query on a direct search', () => {
  it('searches the keyword rewrite and returns it as search_query; without the flag the query is unchanged', async () => {
    simulator = await startSimulator({ port: 0 });
    const client = await start({ upstream: { url: simulator.url }, fileSearch: { pollAfterMs: 20 } });
    const storeId = await storeWithDoc(client);
    const question = "I'd like to know the height of the main office building.";

    const rewritten = await search(client, storeId, { query: question, rewrite_query: true });
    expect(rewritten.search_query).toEqual(['height main office building']);
    expect(rewritten.data[0].content[0].text).toContain('112 metres');
    // the query vector was computed from the rewritten text
    const embedded = simulator.requests.filter((r) => r.path === '/v1/embeddings').at(-1);
    expect((embedded?.body as { input: string[] } | undefined)?.input).toEqual(['height main office building']);

    const plain = await search(client, storeId, { query: question });
    expect(plain.search_query).toEqual([question]);
    const several = await search(client, storeId, { query: ['How do I file a complaint?', 'office height'], rewrite_query: true });
    expect(several.search_query).toEqual(['file complaint', 'office height']);

    const bad = await fetch(`${gateway!.url}/v1/vector_stores/${storeId}/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'x', rewrite_query: 'yes' }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: unknown }).error).toMatchObject({ param: 'rewrite_query', code: 'invalid_type' });
  });

  it('lets fileSearch.rewriteModel write the query, routed to the upstream that serves it', async () => {
    simulator = await startSimulator({ port: 0 });
    const seen: any[] = [];
    const url = await rewriteUpstream(200, '"main office building height"\nextra words', seen);
    const client = await start({
      upstreams: [
        { name: 'rewrite', url, models: ['rewriter'] },
        { name: 'sim', url: simulator.url, models: ['switchyard-sim', 'text-embedding-3-small'] },
      ],
      fileSearch: { pollAfterMs: 20, rewriteModel: 'rewriter' },
    });
    const storeId = await storeWithDoc(client);
    const page = await search(client, storeId, { query: 'How tall is the main office building?', rewrite_query: true });
    expect(page.search_query).toEqual(['main office building height']);
    expect(page.data[0].content[0].text).toContain('112 metres');
    expect(seen).toHaveLength(1);
    expect(seen[0].path).toBe('/v1/chat/completions');
    expect(seen[0].body).toMatchObject({ model: 'rewriter', temperature: 0, messages: [{ role: 'system' }, { role: 'user', content: 'How tall is the main office building?' }] });
  });

  it('falls back to the keyword rewrite when the rewrite model fails', async () => {
    simulator = await startSimulator({ port: 0 });
    const seen: any[] = [];
    const url = await rewriteUpstream(500, '', seen);
    const client = await start({
      upstreams: [
        { name: 'rewrite', url, models: ['rewriter'] },
        { name: 'sim', url: simulator.url, models: ['switchyard-sim', 'text-embedding-3-small'] },
      ],
      fileSearch: { pollAfterMs: 20, rewriteModel: 'rewriter' },
    });
    const storeId = await storeWithDoc(client);
    const page = await search(client, storeId, { query: 'How tall is the main office building?', rewrite_query: true });
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(page.search_query).toEqual(['tall main office building']);
    expect(page.data.length).toBeGreaterThan(0);
  });
});
