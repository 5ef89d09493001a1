// The Files API's edges (upload cap, purposes, malformed uploads, 404s) and keyword-only
// file_search when the upstream has no embeddings: ingestion still completes, the store says so
// in its metadata, and search still answers. In process (test/helpers/in-process.ts): no socket
// between the client and the gateway.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';

describe('Files API edges', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { files: { maxUploadBytes: 8_192 } } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0, fetch: inProcessFetch(tg.gateway) });
  });
  afterAll(async () => tg?.close());

  it('refuses a file over the cap with 413 and leaves nothing on disk', async () => {
    await expect(client.files.create({ file: await toFile(Buffer.alloc(10_000, 97), 'big.txt'), purpose: 'assistants' })).rejects.toMatchObject({ status: 413, code: 'file_too_large' });
    expect(readdirSync(join(tg.dataDir, 'files'))).toEqual([]);
    const ok = await client.files.create({ file: await toFile(Buffer.alloc(8_192, 97), 'exact.txt'), purpose: 'user_data', expires_after: { anchor: 'created_at', seconds: 3600 } });
    expect(ok).toMatchObject({ bytes: 8_192, purpose: 'user_data', status: 'processed', expires_at: ok.created_at + 3600 });
    expect(readdirSync(join(tg.dataDir, 'files'))).toEqual([ok.id]);
    expect(await client.files.delete(ok.id)).toMatchObject({ id: ok.id, deleted: true });
    expect(readdirSync(join(tg.dataDir, 'files'))).toEqual([]);
  });

  it('answers bad uploads with 400s naming the parameter', async () => {
    await expect(client.files.create({ file: await toFile(Buffer.from('x'), 'a.txt'), purpose: 'wallpaper' as any })).rejects.toMatchObject({ status: 400, param: 'purpose' });
    const noFile = new FormData();
    noFile.append('purpose', 'assistants');
    const res = await inProcessFetch(tg.gateway)(`${tg.baseURL}/files`, { method: 'POST', body: noFile });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe('file');
    const json = await inProcessFetch(tg.gateway)(`${tg.baseURL}/files`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(400);
    await expect(client.files.retrieve('file-nope')).rejects.toMatchObject({ status: 404 });
    await expect(client.vectorStores.create({ file_ids: ['file-nope'] })).rejects.toMatchObject({ status: 404, param: 'file_ids[0]' });
    await expect(client.vectorStores.create({ chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 50, chunk_overlap_tokens: 0 } } })).rejects.toMatchObject({ status: 400, param: 'chunking_strategy.static' });
    await expect(client.vectorStores.create({ expires_after: { anchor: 'last_active_at', days: 0 } })).rejects.toMatchObject({ status: 400, param: 'expires_after.days' });
  });

  it('ingests with a custom static chunking strategy', async () => {
    const text = Array.from({ length: 300 }, (_, i) => `lighthouse${i}`).join(' ');
    const file = await client.files.create({ file: await toFile(Buffer.from(text), 'long.txt'), purpose: 'assistants' });
    const store = await client.vectorStores.create({ name: 'chunks' });
    const attached = await client.vectorStores.files.createAndPoll(store.id, { file_id: file.id, chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 20 } } });
    expect(attached.status).toBe('completed');
    expect(attached.chunking_strategy).toEqual({ type: 'static', static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 20 } });
    const content = await client.vectorStores.files.content(file.id, { vector_store_id: store.id });
    expect(content.data.length).toBeGreaterThan(5);
  });
});

describe('file_search with an upstream that has no embeddings', () => {
  let noEmbeddings: Server;
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    noEmbeddings = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"detail":"Not Found"}');
    });
    await new Promise<void>((resolve) => noEmbeddings.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(noEmbeddings.address() as AddressInfo).port}/v1`;
    tg = await startTestGateway({ config: { fileSearch: { embeddingsUrl: url, pollAfterMs: 50 } } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0, fetch: inProcessFetch(tg.gateway) });
  });
  afterAll(async () => {
    await tg?.close();
    await new Promise<void>((resolve) => noEmbeddings.close(() => resolve()));
  });

  it('completes ingestion keyword-only, says so in the store metadata, and still searches', async () => {
    const store = await client.vectorStores.create({ name: 'kw', metadata: { owner: 'qa' } });
    const file = await client.vectorStores.files.uploadAndPoll(store.id, await toFile(Buffer.from('The lighthouse keeper logs the weather every night.'), 'keeper.md'));
    expect(file.status).toBe('completed');
    const view = await client.vectorStores.retrieve(store.id);
    expect(view.metadata).toMatchObject({ owner: 'qa', switchyard_retrieval: expect.stringMatching(/^keyword_only: /) });
    const hits = await client.vectorStores.search(store.id, { query: 'Who logs the weather?' });
    expect(hits.data.map((h) => h.file_id)).toEqual([file.id]);
    expect(hits.data[0].score).toBe(1);
  });
});
