// file_search end to end with the official `openai` SDK: real PDF / DOCX / Markdown uploads,
// vector stores, ingestion (worker threads, the simulator's hashing embedder at /v1/embeddings),
// direct search with filters and a threshold, and `responses.create` with the file_search tool
// (blocking and streamed) whose answer carries `file_citation` annotations. Every block runs
// against SQLite and against PostgreSQL (skipped, saying why, when the server is unreachable).
// The Files / vector store routes and blocking turns are answered in process
// (test/helpers/in-process.ts); the streamed turn and the restart go over a socket.
import { randomBytes } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/simulate/server.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { inProcessFetch } from '../../helpers/in-process.js';
import { dropSchemas, PG_URL, postgresAbsent, probePostgres } from '../../helpers/postgres.js';
import { checkStreamInvariants } from '../../helpers/spec.js';

const FIXTURES = new URL('../../fixtures/files/', import.meta.url);
const fixture = (name: string) => new URL(name, FIXTURES);
const pgUnavailable = await probePostgres(PG_URL);
if (pgUnavailable) console.warn(`file-search: ${pgUnavailable}; the PostgreSQL blocks are skipped`);

const schemas: string[] = [];
afterAll(async () => {
  if (!pgUnavailable) await dropSchemas(schemas);
});

type Backend = 'sqlite' | 'postgres';

function storeConfig(backend: Backend): Record<string, unknown> {
  if (backend === 'sqlite') return {};
  const schema = `switchyard_fs_test_${randomBytes(5).toString('hex')}`;
  schemas.push(schema);
  return { store: { kind: 'postgres', url: PG_URL, schema, maxConnections: 4 } };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`file_search on ${backend}`, () => {
    if (backend === 'postgres' && pgUnavailable) {
      postgresAbsent(pgUnavailable);
      return;
    }

    let tg: TestGateway;
    /** In process: no socket between the SDK and the gateway. */
    let client: OpenAI;
    /** Over a socket, for the streamed turn. */
    let socketClient: OpenAI;
    let storeId: string;
    const ids: Record<'pdf' | 'docx' | 'md', string> = { pdf: '', docx: '', md: '' };

    beforeAll(async () => {
      tg = await startTestGateway({ config: { ...storeConfig(backend), fileSearch: { pollAfterMs: 50 } } as any });
      client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0, fetch: inProcessFetch(tg.gateway) });
      socketClient = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
      const store = await client.vectorStores.create({ name: 'handbook', metadata: { team: 'docs' } });
      storeId = store.id;
      expect(store).toMatchObject({ object: 'vector_store', name: 'handbook', status: 'completed', file_counts: { total: 0 }, metadata: { team: 'docs' } });
      const uploads = [
        ['pdf', 'aurora-field-guide.pdf', { category: 'science', year: 2024 }],
        ['docx', 'zephyr-sales-report.docx', { category: 'finance', year: 2025 }],
        ['md', 'sourdough-guide.md', { category: 'cooking', year: 2023 }],
      ] as const;
      for (const [key, name, attributes] of uploads) {
        const file = await client.vectorStores.files.uploadAndPoll(storeId, createReadStream(fixture(name)), { pollIntervalMs: undefined });
        expect(file.status, JSON.stringify(file.last_error)).toBe('completed');
        ids[key] = file.id;
        const updated = await client.vectorStores.files.update(file.id, { vector_store_id: storeId, attributes });
        expect(updated.attributes).toEqual(attributes);
      }
    }, 60_000);
    afterAll(async () => {
      await tg?.close();
    });

    it('uploads, lists with cursors, retrieves and serves file content', async () => {
      const pdf = await client.files.retrieve(ids.pdf);
      expect(pdf).toMatchObject({ object: 'file', filename: 'aurora-field-guide.pdf', purpose: 'assistants', bytes: readFileSync(fixture('aurora-field-guide.pdf')).length });
      const content = Buffer.from(await (await client.files.content(ids.docx)).arrayBuffer());
      expect(content.equals(readFileSync(fixture('zephyr-sales-report.docx')))).toBe(true);
      const first = await client.files.list({ limit: 2, order: 'asc' });
      expect(first.data.map((f) => f.id)).toEqual([ids.pdf, ids.docx]);
      expect(first.hasNextPage()).toBe(true);
      const next = await first.getNextPage();
      expect(next.data.map((f) => f.id)).toEqual([ids.md]);
    });

    it('reports the store completed with exact file counts and the parsed content of each file', async () => {
      const store = await client.vectorStores.retrieve(storeId);
      expect(store.status).toBe('completed');
      expect(store.file_counts).toEqual({ in_progress: 0, completed: 3, failed: 0, cancelled: 0, total: 3 });
      expect(store.usage_bytes).toBeGreaterThan(0);
      const files = await client.vectorStores.files.list(storeId, { filter: 'completed' });
      expect(files.data.map((f) => f.id).sort()).toEqual(Object.values(ids).sort());
      expect(files.data[0].chunking_strategy).toEqual({ type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 } });
      const parsed = await client.vectorStores.files.content(ids.pdf, { vector_store_id: storeId });
      expect(parsed.data.map((p) => p.text).join(' ')).toContain('aurora season runs from September to March');
      const docx = await client.vectorStores.files.content(ids.docx, { vector_store_id: storeId });
      expect(docx.data.map((p) => p.text).join(' ')).toContain('grew 42 percent');
    });

    it('searches directly: filters applied before ranking, scores in 0–1, threshold honoured', async () => {
      const all = await client.vectorStores.search(storeId, { query: 'When is the aurora season in Tromso?', max_num_results: 10 });
      expect(all.data.length).toBeGreaterThan(0);
      expect(all.data[0].file_id).toBe(ids.pdf);
      expect(all.data[0].filename).toBe('aurora-field-guide.pdf');
      expect(all.data[0].attributes).toEqual({ category: 'science', year: 2024 });
      for (const hit of all.data) expect(hit.score >= 0 && hit.score <= 1).toBe(true);
      expect([...all.data].sort((a, b) => b.score - a.score)).toEqual(all.data);

      // the filter excludes the aurora guide before ranking: nothing of it may come back
      const finance = await client.vectorStores.search(storeId, { query: 'When is the aurora season in Tromso?', filters: { type: 'eq', key: 'category', value: 'finance' } });
      expect(finance.data.every((h) => h.file_id === ids.docx)).toBe(true);
      const compound = await client.vectorStores.search(storeId, {
        query: 'flour water starter',
        filters: { type: 'and', filters: [{ type: 'gte', key: 'year', value: 2023 }, { type: 'nin', key: 'category', value: ['finance', 'science'] }] },
      });
      expect(compound.data.length).toBeGreaterThan(0);
      expect(compound.data.every((h) => h.file_id === ids.md)).toBe(true);

      const lowest = all.data.at(-1)!.score;
      const threshold = (all.data[0].score + lowest) / 2;
      const cut = await client.vectorStores.search(storeId, { query: 'When is the aurora season in Tromso?', ranking_options: { score_threshold: threshold } });
      expect(cut.data.length).toBeGreaterThan(0);
      expect(cut.data.every((h) => h.score >= threshold)).toBe(true);
      if (lowest < threshold) expect(cut.data.length).toBeLessThan(all.data.length);
    });

    it('weighs the keyword and vector sides by ranking_options.hybrid_search', async () => {
      // the SDK types hybrid_search only on the tool's ranking_options; the endpoint takes it too
      const keywordOnly = await client.vectorStores.search(storeId, { query: 'Dutch oven', ranking_options: { hybrid_search: { embedding_weight: 0, text_weight: 1 } } as any });
      expect(keywordOnly.data.length).toBeGreaterThan(0);
      // with no weight on vectors only keyword matches can rank
      expect(keywordOnly.data.every((h) => /oven|dutch/i.test(h.content[0].text))).toBe(true);
      const vectorOnly = await client.vectorStores.search(storeId, { query: 'Dutch oven', max_num_results: 20, ranking_options: { hybrid_search: { embedding_weight: 1, text_weight: 0 } } as any });
      expect(vectorOnly.data[0].file_id).toBe(ids.md);
      expect(vectorOnly.data.length).toBeGreaterThanOrEqual(keywordOnly.data.length);
    });

    it('never turns a question into a full-text syntax error', async () => {
      for (const query of ['what is "NOT" (the) AND OR aurora*?', 'NEAR(a b) : ^ - " \' ;', '???']) {
        const page = await client.vectorStores.search(storeId, { query });
        expect(Array.isArray(page.data)).toBe(true);
      }
    });

    it('answers bad search input with OpenAI-shaped 400s', async () => {
      const bad = async (body: Record<string, unknown>, param: string) => {
        const res = await inProcessFetch(tg.gateway)(`${tg.baseURL}/vector_stores/${storeId}/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error.param).toBe(param);
      };
      await bad({ query: 'x', max_num_results: 51 }, 'max_num_results');
      await bad({ query: 'x', ranking_options: { score_threshold: 2 } }, 'ranking_options.score_threshold');
      await bad({ query: 'x', filters: { type: 'or', filters: [{ type: 'like', key: 'a', value: 1 }] } }, 'filters.filters[0].type');
      await bad({}, 'query');
      const missing = await inProcessFetch(tg.gateway)(`${tg.baseURL}/vector_stores/vs_missing/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'x' }) });
      expect(missing.status).toBe(404);
    });

    it('lets the model search with file_search and cites the right file (blocking)', async () => {
      const script = { rounds: [{ tool_calls: [{ name: 'file_search', arguments: { queries: ['aurora season Tromso'] } }] }, { text: 'The aurora season in Tromso runs from September to March [1].' }] };
      const response = await client.responses.create({
        model: 'sim',
        input: scripted(script),
        tools: [{ type: 'file_search', vector_store_ids: [storeId], max_num_results: 3 }],
        include: ['file_search_call.results'],
      });
      const call = response.output.find((o) => o.type === 'file_search_call')!;
      expect(call).toMatchObject({ type: 'file_search_call', status: 'completed', queries: ['aurora season Tromso'] });
      expect(call.results![0]).toMatchObject({ file_id: ids.pdf, filename: 'aurora-field-guide.pdf', attributes: { category: 'science', year: 2024 } });
      const message = response.output.find((o) => o.type === 'message')!;
      const text = message.content[0] as OpenAI.Responses.ResponseOutputText;
      expect(text.text).toBe('The aurora season in Tromso runs from September to March.');
      expect(text.annotations).toEqual([{ type: 'file_citation', file_id: ids.pdf, filename: 'aurora-field-guide.pdf', index: text.text.length - 1 }]);
      // the model saw numbered passages from the right file
      const toolResult = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
      expect(toolResult.content).toContain('[1] aurora-field-guide.pdf');
    });

    it('streams the file_search_call lifecycle and the file_citation annotation (no marker in the deltas)', async () => {
      const script = { rounds: [{ tool_calls: [{ name: 'file_search', arguments: { queries: ['Zephyr revenue growth', 'third quarter sales'] } }] }, { text: 'Zephyr revenue grew 42 percent [1]. Margins fell [1].', chunks: 12 }] };
      const raw = await fetch(`${tg.baseURL}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim', input: scripted(script), tools: [{ type: 'file_search', vector_store_ids: [storeId], filters: { type: 'eq', key: 'category', value: 'finance' } }], stream: true }),
      });
      const events = await readSse(raw);
      const types = events.map((e) => e.type);
      const started = types.indexOf('response.file_search_call.in_progress');
      expect(started).toBeGreaterThan(-1);
      expect(types.indexOf('response.file_search_call.searching')).toBeGreaterThan(started);
      expect(types.indexOf('response.file_search_call.completed')).toBeGreaterThan(types.indexOf('response.file_search_call.searching'));
      const done = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'file_search_call');
      expect(done!.item).toMatchObject({ status: 'completed', queries: ['Zephyr revenue growth', 'third quarter sales'], results: null });
      const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
      expect(deltas).toBe('Zephyr revenue grew 42 percent. Margins fell.');
      const added = events.filter((e) => e.type === 'response.output_text.annotation.added').map((e) => e.annotation);
      expect(added).toEqual([
        { type: 'file_citation', file_id: ids.docx, filename: 'zephyr-sales-report.docx', index: 'Zephyr revenue grew 42 percent'.length },
        { type: 'file_citation', file_id: ids.docx, filename: 'zephyr-sales-report.docx', index: deltas.length - 1 },
      ]);
      const completed = events.at(-1)!;
      expect(completed.type).toBe('response.completed');
      const part = completed.response.output.find((o: any) => o.type === 'message').content[0];
      expect(part.text).toBe(deltas);
      expect(part.annotations).toEqual(added);
      expect(checkStreamInvariants(events)).toEqual([]);

      // the same through the SDK's streaming helper
      const stream = socketClient.responses.stream({ model: 'sim', input: scripted(script), tools: [{ type: 'file_search', vector_store_ids: [storeId] }], include: ['file_search_call.results'] });
      const seen: string[] = [];
      stream.on('event', (e) => seen.push(e.type));
      const final = await stream.finalResponse();
      expect(seen).toEqual(expect.arrayContaining(['response.file_search_call.searching', 'response.output_text.annotation.added']));
      expect(final.output_text).toBe('Zephyr revenue grew 42 percent. Margins fell.');
      const call = final.output.find((o) => o.type === 'file_search_call')!;
      expect(call.results?.[0]?.file_id).toBe(ids.docx);
      const text = final.output.find((o) => o.type === 'message')!.content[0] as OpenAI.Responses.ResponseOutputText;
      expect(text.annotations.map((a) => (a as any).file_id)).toEqual([ids.docx, ids.docx]);
    });

    it('fails the call (not an empty result) when the search cannot run', async () => {
      const script = { rounds: [{ tool_calls: [{ name: 'file_search', arguments: { queries: [] } }] }, { text: 'no luck' }] };
      const response = await client.responses.create({ model: 'sim', input: scripted(script), tools: [{ type: 'file_search', vector_store_ids: [storeId] }] });
      expect(response.output.find((o) => o.type === 'file_search_call')).toMatchObject({ status: 'failed' });
      expect(response.status).toBe('completed');
      // a store that does not exist fails the call too, and the model is told why
      const missing = { rounds: [{ tool_calls: [{ name: 'file_search', arguments: { queries: ['aurora'] } }] }, { text: 'sorry' }] };
      const second = await client.responses.create({ model: 'sim', input: scripted(missing), tools: [{ type: 'file_search', vector_store_ids: ['vs_does_not_exist'] }] });
      expect(second.output.find((o) => o.type === 'file_search_call')).toMatchObject({ status: 'failed', queries: ['aurora'] });
      const told = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
      expect(told.content).toContain("vector store 'vs_does_not_exist' not found");
    });

    it('detaches, batches, cancels and deletes', async () => {
      const upload = await client.files.create({ file: await toFile(Buffer.from('Notes about lighthouses and their keepers.'), 'lighthouses.txt'), purpose: 'assistants' });
      const other = await client.vectorStores.create({ name: 'batch' });
      const batch = await client.vectorStores.fileBatches.createAndPoll(other.id, { file_ids: [upload.id, ids.md] });
      expect(batch).toMatchObject({ object: 'vector_store.files_batch', status: 'completed', file_counts: { completed: 2, total: 2 } });
      const batchFiles = await client.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: other.id });
      expect(batchFiles.data.map((f) => f.id).sort()).toEqual([upload.id, ids.md].sort());
      const cancelled = await client.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: other.id });
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.file_counts.completed).toBe(2); // finished files stay finished

      // deleting a file detaches it from every store
      await client.files.delete(upload.id);
      await expect(client.vectorStores.files.retrieve(upload.id, { vector_store_id: other.id })).rejects.toMatchObject({ status: 404 });
      const hits = await client.vectorStores.search(other.id, { query: 'lighthouses keepers' });
      expect(hits.data.every((h) => h.file_id !== upload.id)).toBe(true);

      await client.vectorStores.files.delete(ids.md, { vector_store_id: other.id });
      expect((await client.vectorStores.retrieve(other.id)).file_counts.total).toBe(0);
      expect(await client.vectorStores.delete(other.id)).toMatchObject({ deleted: true });
      await expect(client.vectorStores.retrieve(other.id)).rejects.toMatchObject({ status: 404 });
    });

    it('fails an unreadable file with last_error, never hangs', async () => {
      const broken = await client.files.create({ file: await toFile(Buffer.from('%PDF-1.4 this is not really a pdf'), 'broken.pdf'), purpose: 'assistants' });
      const binary = await client.files.create({ file: await toFile(Buffer.from([0, 1, 2, 3, 255, 0]), 'blob.bin'), purpose: 'assistants' });
      const a = await client.vectorStores.files.createAndPoll(storeId, { file_id: broken.id });
      expect(a.status).toBe('failed');
      expect(a.last_error?.code).toBe('invalid_file');
      const b = await client.vectorStores.files.createAndPoll(storeId, { file_id: binary.id });
      expect(b).toMatchObject({ status: 'failed', last_error: { code: 'unsupported_file' } });
      const store = await client.vectorStores.retrieve(storeId);
      expect(store.file_counts).toMatchObject({ failed: 2, completed: 3, total: 5 });
      await client.vectorStores.files.delete(broken.id, { vector_store_id: storeId });
      await client.vectorStores.files.delete(binary.id, { vector_store_id: storeId });
    });
  });

  describe(`file_search ingestion survives a restart (${backend})`, () => {
    if (backend === 'postgres' && pgUnavailable) {
      postgresAbsent(pgUnavailable);
      return;
    }
    let simulator: Simulator;
    let tg: TestGateway;
    beforeAll(async () => {
      // embeddings answer slowly, so the gateway can be stopped while a file is being ingested
      simulator = await startSimulator({ port: 0, embeddingsDelayMs: 1_500 });
      tg = await startTestGateway({ simulator, config: { ...storeConfig(backend), fileSearch: { pollAfterMs: 50 } } as any });
    });
    afterAll(async () => {
      await tg?.close();
      await simulator?.close();
    });

    it('resumes a queued file after the gateway restarts and completes it', async () => {
      let client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
      const store = await client.vectorStores.create({ name: 'restart' });
      const file = await client.files.create({ file: createReadStream(fixture('sourdough-guide.md')), purpose: 'assistants' });
      const attached = await client.vectorStores.files.create(store.id, { file_id: file.id });
      expect(attached.status).toBe('in_progress');
      // wait until ingestion reached the embedder, then stop the gateway mid-ingestion
      const deadline = Date.now() + 15_000;
      while (!simulator.requests.some((r) => r.path === '/v1/embeddings') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(simulator.requests.some((r) => r.path === '/v1/embeddings')).toBe(true);
      await tg.restart();
      client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
      expect((await client.vectorStores.files.retrieve(file.id, { vector_store_id: store.id })).status).toBe('in_progress');
      const done = await client.vectorStores.files.poll(store.id, file.id);
      expect(done.status).toBe('completed');
      expect(simulator.requests.filter((r) => r.path === '/v1/embeddings').length).toBeGreaterThanOrEqual(2);
      const hits = await client.vectorStores.search(store.id, { query: 'Dutch oven baking temperature' });
      expect(hits.data[0].file_id).toBe(file.id);
    }, 60_000);
  });
}
