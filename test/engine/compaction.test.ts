// Compaction (`POST /v1/responses/compact`, auto-compaction helpers) and input token counting
// (`POST /v1/responses/input_tokens`), against a real engine in front of the simulator. The
// routes are answered in process (test/helpers/in-process.ts) by this test's own dispatch
// (matchRoute over compactRoutes + the create route), with an Engine built as src/app.ts builds it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import {
  applyCompactions,
  COMPACTION_PROMPT,
  compactionToModelItem,
  decodeCompaction,
  encodeCompaction,
  keptPublicItems,
  maybeCompact,
  newCompactionItem,
  parseContextManagement,
  SUMMARY_MESSAGE_PREFIX,
} from '../../src/engine/compaction.js';
import { approvalDigest } from '../../src/tools/mcp/approvals.js';
import { toModelItems } from '../../src/engine/conversation.js';
import { countInputTokens, estimateTokens, tokenizeUrl } from '../../src/engine/token-count.js';
import { Engine } from '../../src/engine/turn.js';
import { GatewayError } from '../../src/errors.js';
import { compactRoutes } from '../../src/http/compact-routes.js';
import type { Dispatch } from '../../src/http/dispatch.js';
import { sendError } from '../../src/http/json.js';
import { matchRoute, type Route } from '../../src/http/router.js';
import { McpService } from '../../src/mcp/service.js';
import type { ModelItem } from '../../src/protocol/model.js';
import type { ResponseObject } from '../../src/protocol/responses.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import { SqliteConversationStore } from '../../src/store/sqlite-conversations.js';
import type { DeclareContext } from '../../src/tools/handler.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { ChatCompletionsUpstream } from '../../src/upstream/chat-completions.js';
import { inProcessFetch } from '../helpers/in-process.js';
import { validateAgainst } from '../helpers/spec.js';

const MODEL = 'compact-model';
const SUMMARY = 'SUMMARY-7f3: the user is planning a trip to Oslo in May; decided on the train; open question: which hotel.';

let simulator: Simulator;
let dataDir: string;
let store: SqliteResponseStore;
let conversations: SqliteConversationStore;
let upstream: ChatCompletionsUpstream;
let mcp: McpService;
let engine: Engine;
/** fetch into this test's routes, in process. */
let gateway: typeof fetch;
let client: OpenAI;

/** A fake vLLM: `POST /tokenize` answers according to `tokenizeMode`, recording the bodies. */
let fakeVllm: { url: string; server: Server };
let tokenizeMode: 'count' | 'not_found' | 'hang' = 'count';
const tokenizeRequests: Array<{ path: string; body: any }> = [];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** The test's route surface, in process: the given routes, errors in the OpenAI shape (as src/http/dispatch.ts sends them). */
function startHttp(routes: Route[]): typeof fetch {
  const dispatch: Dispatch = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const match = matchRoute(routes, req.method ?? 'GET', path);
    const run = async () => {
      if (match === undefined || match === 'method_not_allowed') throw new GatewayError(404, 'invalid_request_error', 'unknown_url', `Unknown request URL: ${path}`);
      await match.route.handle(req, res, match.params, new URLSearchParams());
    };
    run().catch((err: unknown) => {
      if (res.headersSent) return void res.end();
      sendError(res, err instanceof GatewayError ? err : new GatewayError(500, 'server_error', 'server_error', String(err)));
    });
  };
  return inProcessFetch(dispatch);
}

/** A stored, completed response (what `POST /v1/responses` does for a blocking request). */
async function createStored(body: Record<string, unknown>): Promise<ResponseObject> {
  const turn = await engine.prepare({ model: MODEL, ...body, store: true });
  const response = await engine.run(turn, null, new AbortController().signal);
  expect(response.status).toBe('completed');
  return response;
}

function routesFor(upstreamBaseUrl: string, tokenizeTimeoutMs?: number): Route[] {
  return compactRoutes({ engine, upstream, upstreamBaseUrl, maxBodyBytes: 1 << 20, tokenizeTimeoutMs });
}

beforeAll(async () => {
  simulator = await startSimulator({ port: 0 });
  dataDir = mkdtempSync(join(tmpdir(), 'switchyard-compaction-'));
  // as src/app.ts composes it
  const config = loadConfig({ env: {}, overrides: { dataDir, logLevel: 'silent', upstream: { url: simulator.url, maxRetries: 1, retryBaseDelayMs: 10 } } });
  const log = pino({ level: 'silent' });
  upstream = new ChatCompletionsUpstream({ ...config.upstream, baseUrl: simulator.url }, config.upstream.reasoningReplay);
  store = new SqliteResponseStore(config.dataDir);
  conversations = new SqliteConversationStore(config.dataDir);
  mcp = new McpService({ ...config.mcp, callTimeoutMs: config.tools.timeoutsMs.mcp ?? config.mcp.callTimeoutMs });
  const declare: DeclareContext = { executionFor: () => undefined, logOnce: () => undefined, mcp };
  engine = new Engine(upstream, store, declare, { maxToolRounds: config.tools.maxToolRounds, maxConcurrentGatewayCalls: config.tools.maxConcurrentGatewayCalls, conversations }, log);
  gateway = startHttp(routesFor(simulator.url));
  client = new OpenAI({ baseURL: 'http://in-process/v1', apiKey: 'test', maxRetries: 0, fetch: gateway });

  const vllm = createServer(async (req, res) => {
    const body = await readBody(req);
    tokenizeRequests.push({ path: req.url ?? '', body: JSON.parse(body) });
    if (tokenizeMode === 'hang') return; // never answers; the client's timeout ends it
    if (tokenizeMode === 'not_found' || req.url !== '/tokenize') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end('{"detail":"Not Found"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count: 42, max_model_len: 4096, tokens: Array.from({ length: 42 }, (_, i) => i + 100) }));
  });
  fakeVllm = { url: await listen(vllm), server: vllm };
});

afterAll(async () => {
  fakeVllm.server.closeAllConnections();
  await new Promise((resolve) => fakeVllm.server.close(resolve));
  await upstream.close();
  await mcp.close();
  await store.close();
  await conversations.close();
  await simulator.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * 20 messages: a developer message carrying the script for the summary, then user and assistant
 * alternating, a user message last.
 */
function longConversation(): Array<{ role: 'developer' | 'user' | 'assistant'; content: string }> {
  const messages: Array<{ role: 'developer' | 'user' | 'assistant'; content: string }> = [];
  for (let i = 1; i <= 20; i++) {
    const role = i === 1 ? 'developer' : i % 2 === 0 ? 'user' : 'assistant';
    let content = `Message ${i} (${role}): detail-${i} about the Oslo trip, ${'lorem ipsum '.repeat(20)}`;
    if (i === 1) content += `\n#sim ${JSON.stringify({ rounds: [{ text: SUMMARY }] })}`;
    messages.push({ role, content });
  }
  messages[19].content = 'Message 20 (user): so which hotel should I book?';
  return messages;
}

async function post(path: string, body: unknown, send = gateway): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

describe('POST /v1/responses/compact', () => {
  it('compacts a 20-message conversation to [compaction, last user message], valid per the spec', async () => {
    const input = longConversation();
    const request = { model: MODEL, input };
    const from = simulator.requests.length;
    const { status, body } = await post('/v1/responses/compact', request);
    expect(status).toBe(200);

    // the model was asked once: the 19 earlier messages, then the compaction prompt as the last message
    const sent = simulator.requests.slice(from);
    expect(sent).toHaveLength(1);
    const messages = sent[0].body.messages as Array<{ role: string; content: string }>;
    expect(messages.at(-1)).toEqual({ role: 'user', content: COMPACTION_PROMPT });
    expect(messages).toHaveLength(20);
    expect(messages.map((m) => m.content).join('\n')).not.toContain('Message 20');
    expect(sent[0].body.tools).toBeUndefined();

    expect(body.object).toBe('response.compaction');
    expect(body.id).toMatch(/^resp_/);
    expect(Number.isInteger(body.created_at)).toBe(true);
    expect(body.output).toHaveLength(2);
    const [compaction, kept] = body.output;
    expect(compaction).toEqual({ type: 'compaction', id: expect.stringMatching(/^cmp_/), encrypted_content: expect.stringMatching(/^[A-Za-z0-9_-]+$/) });
    expect(decodeCompaction(compaction)).toBe(SUMMARY);
    expect(kept).toEqual({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: input[19].content }] });
    // usage from the upstream (the simulator counts ceil(chars / 4) prompt tokens, one token per word)
    expect(body.usage.input_tokens).toBeGreaterThan(500);
    expect(body.usage.output_tokens).toBe(SUMMARY.split(' ').length);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);

    expect(validateAgainst('CompactResource', body)).toEqual([]);
    expect(validateAgainst('CompactionBody', compaction)).toEqual([]);
    expect(validateAgainst('CompactionSummaryItemParam', compaction)).toEqual([]);
    expect(validateAgainst('ItemField', kept)).toEqual([]);
  });

  it('feeds the output back as input: the next request carries the summary, not the 20 messages', async () => {
    const { body } = await post('/v1/responses/compact', { model: MODEL, input: longConversation() });
    const output = body.output as Array<Record<string, unknown>>;

    const turn = await engine.prepare({ model: MODEL, input: output, store: false });
    // the conversation builder itself turns the compaction item into the summary message
    expect(turn.conversation).toHaveLength(2);
    expect(turn.conversation[0]).toEqual({ type: 'message', role: 'developer', content: [{ type: 'text', text: `${SUMMARY_MESSAGE_PREFIX}${SUMMARY}` }] });

    const from = simulator.requests.length;
    const response = await engine.run(turn, null, new AbortController().signal);
    expect(response.status).toBe('completed');
    expect((response.output[0] as any).content[0].text).toBe('You said: Message 20 (user): so which hotel should I book?');

    const messages = simulator.requests[from].body.messages as Array<{ role: string; content: string }>;
    expect(messages).toEqual([
      { role: 'system', content: `${SUMMARY_MESSAGE_PREFIX}${SUMMARY}` },
      { role: 'user', content: 'Message 20 (user): so which hotel should I book?' },
    ]);
    expect(JSON.stringify(messages)).not.toContain('detail-3');
  });

  it('the conversation builder turns a compaction item into the summary message', () => {
    const item = newCompactionItem('earlier stuff');
    expect(toModelItems([item], new ToolRegistry())).toEqual([compactionToModelItem(item)]);
  });

  it('works through the official SDK (client.responses.compact), with instructions kept out of the summary', async () => {
    const from = simulator.requests.length;
    const compacted = await client.responses.compact({
      model: MODEL,
      instructions: 'You are a travel agent.',
      input: [
        { role: 'user', content: `Book me a train.\n#sim ${JSON.stringify({ rounds: [{ text: 'Booked train 42.' }] })}` },
        { role: 'assistant', content: 'Which day?' },
        { role: 'user', content: 'Friday.' },
      ],
    });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((item) => item.type)).toEqual(['compaction', 'message']);
    expect(decodeCompaction(compacted.output[0])).toBe('Booked train 42.');
    const messages = simulator.requests[from].body.messages;
    expect(messages[0]).toEqual({ role: 'system', content: 'You are a travel agent.' });
    expect(messages.at(-1).content).toBe(COMPACTION_PROMPT);
  });

  it('compacts a stored chain by previous_response_id: the kept items come from the history', async () => {
    const first = await createStored({ input: 'Plan a trip to Bergen.' });
    const second = await createStored({ previous_response_id: first.id, input: 'By boat, please.' });
    const from = simulator.requests.length;
    const compacted = await client.responses.compact({ model: MODEL, previous_response_id: second.id });
    // kept: the last user message (stored input of `second`) and the answer after it, verbatim
    expect(compacted.output.slice(1)).toEqual([expect.objectContaining({ type: 'message', role: 'user' }), second.output[0]]);
    expect((compacted.output[1] as any).content[0].text).toBe('By boat, please.');
    expect(decodeCompaction(compacted.output[0])).toMatch(/^You said: /);
    const messages = simulator.requests[from].body.messages;
    expect(messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(validateAgainst('CompactResource', compacted)).toEqual([]);
  });

  it('makes no model call when nothing precedes the last user message', async () => {
    const from = simulator.requests.length;
    const { status, body } = await post('/v1/responses/compact', { model: MODEL, instructions: 'Be brief.', input: 'Hi there.' });
    expect(status).toBe(200);
    expect(simulator.requests.length).toBe(from);
    expect(decodeCompaction(body.output[0])).toBe('');
    expect(compactionToModelItem(body.output[0])).toBeUndefined();
    expect(body.output[1].content).toEqual([{ type: 'input_text', text: 'Hi there.' }]);
    expect(body.usage).toEqual({ input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 });
    expect(validateAgainst('CompactResource', body)).toEqual([]);
  });

  it('rejects a missing model with 400 (param model)', async () => {
    const { status, body } = await post('/v1/responses/compact', { input: 'hello' });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'model', code: 'missing_required_parameter' });
    await expect(client.responses.compact({ input: 'hello' } as any)).rejects.toBeInstanceOf(BadRequestError);
  });

  it('answers an unknown previous_response_id with 404', async () => {
    const { status, body } = await post('/v1/responses/compact', { model: MODEL, previous_response_id: 'resp_doesnotexist' });
    expect(status).toBe(404);
    expect(body.error).toMatchObject({ param: 'previous_response_id', code: 'previous_response_not_found' });
    await expect(client.responses.compact({ model: MODEL, previous_response_id: 'resp_doesnotexist' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('neither consumes nor rejects a pending mcp_approval_response (compact and input_tokens)', async () => {
    const first = await createStored({ input: 'Echo hi.' });
    const request = { id: 'mcpr_pending1', type: 'mcp_approval_request', server_label: 'srv', name: 'echo', arguments: '{"text":"hi"}' };
    const record = (await store.get(first.id))!;
    await store.save({ ...record, response: { ...record.response, output: [...record.response.output, request as any] } });
    await store.recordApproval(request.id, approvalDigest(request));
    const answer = { type: 'mcp_approval_response', approval_request_id: request.id, approve: true };

    const counted = await post('/v1/responses/input_tokens', { model: MODEL, previous_response_id: first.id, input: [answer] });
    expect(counted.status).toBe(200);
    const compacted = await post('/v1/responses/compact', { model: MODEL, previous_response_id: first.id, input: [answer] });
    expect(compacted.status).toBe(200);
    // kept: the user message and everything after it, the answer included (now with an id)
    expect(compacted.body.output.map((i: any) => i.type)).toEqual(['compaction', 'message', 'message', 'mcp_approval_request', 'mcp_approval_response']);
    expect(compacted.body.output[4]).toEqual({ id: expect.stringMatching(/^mcpa_/), ...answer });
    // still usable by the real turn
    expect(await store.consumeApproval(request.id, approvalDigest(request))).toBe('ok');
  });

  it('answers an upstream failure with an OpenAI-shaped 5xx', async () => {
    const { status, body } = await post('/v1/responses/compact', {
      model: MODEL,
      input: [
        { role: 'user', content: `a\n#sim ${JSON.stringify({ rounds: [{ status: 500, error: 'boom' }] })}` },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
    });
    expect(status).toBeGreaterThanOrEqual(500);
    expect(body.error).toMatchObject({ message: expect.any(String), type: expect.any(String) });
  });
});

describe('POST /v1/responses/input_tokens', () => {
  beforeEach(() => {
    tokenizeMode = 'count';
    tokenizeRequests.length = 0;
  });

  it('estimates when the upstream has no /tokenize (the simulator answers 404)', async () => {
    // system "Be brief." (9 chars) → 4 + 3; user "Hello, world!" (13 chars) → 4 + 4
    const { status, body, headers } = await post('/v1/responses/input_tokens', { model: MODEL, instructions: 'Be brief.', input: 'Hello, world!' });
    expect(status).toBe(200);
    expect(body).toEqual({ object: 'response.input_tokens', input_tokens: 15 });
    expect(headers.get('x-switchyard-token-count')).toBe('estimate');
  });

  it('works through the official SDK (client.responses.inputTokens.count); tools count', async () => {
    const plain = await client.responses.inputTokens.count({ model: MODEL, input: 'Hello, world!' });
    expect(plain).toEqual({ object: 'response.input_tokens', input_tokens: 8 });
    const withTools = await client.responses.inputTokens.count({
      model: MODEL,
      input: 'Hello, world!',
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false }],
    });
    expect(withTools.input_tokens).toBeGreaterThan(8 + 10);
  });

  it('counts a previous_response_id chain and a conversation, 404s an unknown id, 400s a missing model', async () => {
    const first = await createStored({ input: 'Hello, world!' });
    // user (8) + assistant "You said: Hello, world!" (23 chars → 4 + 6) + user "Again." (4 + 2)
    const counted = await client.responses.inputTokens.count({ model: MODEL, previous_response_id: first.id, input: 'Again.' });
    expect(counted.input_tokens).toBe(8 + 10 + 6);
    const { status } = await post('/v1/responses/input_tokens', { model: MODEL, previous_response_id: 'resp_nope', input: 'x' });
    expect(status).toBe(404);
    // a conversation's items count too
    const conversation = await conversations.create({}, [{ id: 'msg_c1', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'Hello, world!' }] }]);
    expect((await client.responses.inputTokens.count({ model: MODEL, conversation: conversation.id, input: 'Again.' })).input_tokens).toBe(8 + 6);
    const missing = await post('/v1/responses/input_tokens', { input: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('model');
  });

  it("uses the upstream's vLLM /tokenize (at the server root, not under /v1) when it answers", async () => {
    const http = startHttp(routesFor(`${fakeVllm.url}/v1`));
    const { body, headers } = await post('/v1/responses/input_tokens', { model: MODEL, instructions: 'Be brief.', input: 'Hello, world!' }, http);
    expect(body).toEqual({ object: 'response.input_tokens', input_tokens: 42 });
    expect(headers.get('x-switchyard-token-count')).toBe('upstream');
    expect(tokenizeRequests).toEqual([
      {
        path: '/tokenize',
        body: { model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello, world!' }], add_generation_prompt: true },
      },
    ]);
  });

  it('falls back to the estimate when /tokenize answers 404 or does not answer in time', async () => {
    const http = startHttp(routesFor(`${fakeVllm.url}/v1`, 300));
    tokenizeMode = 'not_found';
    let result = await post('/v1/responses/input_tokens', { model: MODEL, instructions: 'Be brief.', input: 'Hello, world!' }, http);
    expect(result.body).toEqual({ object: 'response.input_tokens', input_tokens: 15 });
    expect(result.headers.get('x-switchyard-token-count')).toBe('estimate');
    tokenizeMode = 'hang';
    const started = Date.now();
    result = await post('/v1/responses/input_tokens', { model: MODEL, instructions: 'Be brief.', input: 'Hello, world!' }, http);
    expect(result.body.input_tokens).toBe(15);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(tokenizeRequests.map((r) => r.path)).toEqual(['/tokenize', '/tokenize']);
  });

  it('countInputTokens sends tools and reports max_model_len', async () => {
    const items: ModelItem[] = [{ type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }];
    const tools = [{ name: 'f', parameters: { type: 'object', properties: {} } }];
    const counted = await countInputTokens(`${fakeVllm.url}/v1/`, MODEL, items, tools, new AbortController().signal);
    expect(counted).toEqual({ tokens: 42, method: 'upstream', maxModelLen: 4096 });
    expect(tokenizeRequests[0].body.tools).toEqual([{ type: 'function', function: tools[0] }]);
    // unreachable upstream → estimate, no throw
    expect(await countInputTokens('http://127.0.0.1:1/v1', MODEL, items, [], new AbortController().signal)).toEqual({ tokens: 5, method: 'estimate' });
  });
});

describe('token estimate', () => {
  it('follows the documented heuristic', () => {
    const items: ModelItem[] = [
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'Hello, world!' }, { type: 'image', url: 'data:image/png;base64,AAAA' }] },
      { type: 'reasoning', text: 'think' },
      { type: 'function_call', callId: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', callId: 'c1', output: 'sunny' },
    ];
    // (4 + 4 + 85) + (4 + 2) + (4 + 3 + 4) + (4 + 2) = 116
    expect(estimateTokens(items)).toBe(116);
    // instructions "Be brief." → 4 + 3; tools: ceil(JSON length / 4)
    const tools = [{ name: 'f' }];
    expect(estimateTokens(items, tools, 'Be brief.')).toBe(116 + 7 + Math.ceil(JSON.stringify(tools).length / 4));
    expect(estimateTokens([])).toBe(0);
  });

  it('finds /tokenize at the server root', () => {
    expect(tokenizeUrl('http://h:8000/v1')).toBe('http://h:8000/tokenize');
    expect(tokenizeUrl('http://h:8000/v1/')).toBe('http://h:8000/tokenize');
    expect(tokenizeUrl('http://h:8000')).toBe('http://h:8000/tokenize');
    expect(tokenizeUrl('https://proxy.example/vllm/v1')).toBe('https://proxy.example/vllm/tokenize');
  });
});

describe('compaction items and helpers', () => {
  it('encodes the summary as an opaque, unencrypted, versioned envelope', () => {
    const item = newCompactionItem('the summary ✓');
    expect(JSON.parse(Buffer.from(item.encrypted_content, 'base64url').toString('utf8'))).toEqual({ v: 1, summary: 'the summary ✓' });
    expect(decodeCompaction(item)).toBe('the summary ✓');
    expect(compactionToModelItem(item)).toEqual({ type: 'message', role: 'developer', content: [{ type: 'text', text: 'Summary of the earlier conversation: the summary ✓' }] });
    // foreign (OpenAI-encrypted) or malformed items are not ours
    expect(decodeCompaction({ type: 'compaction', encrypted_content: 'gAAAAABpM0Yj-abc=' })).toBeUndefined();
    expect(decodeCompaction({ type: 'compaction', encrypted_content: Buffer.from('{"v":2,"summary":"x"}').toString('base64url') })).toBeUndefined();
    expect(decodeCompaction({ type: 'message', encrypted_content: encodeCompaction('x') })).toBeUndefined();
    expect(compactionToModelItem({ type: 'compaction', encrypted_content: 'nope' })).toBeUndefined();
  });

  it('applyCompactions drops what the latest compaction covers', () => {
    const m = (id: string, role = 'user') => ({ type: 'message', id, role, content: [] });
    const compact = { ...newCompactionItem('s') };
    expect(applyCompactions([m('a'), m('b', 'assistant'), compact, m('u')])).toEqual([compact, m('u')]);
    const auto = { ...newCompactionItem('s', 2) };
    expect(applyCompactions([m('a'), m('b', 'assistant'), m('u'), m('x', 'assistant'), auto, m('y', 'assistant')])).toEqual([auto, m('u'), m('x', 'assistant'), m('y', 'assistant')]);
    const foreign = { type: 'compaction', id: 'cmp_x', encrypted_content: 'gAAAA' };
    expect(applyCompactions([m('a'), foreign, m('u')])).toEqual([m('a'), foreign, m('u')]);
    expect(keptPublicItems([m('a'), m('b', 'assistant'), m('u'), m('x', 'assistant')])).toEqual([m('u'), m('x', 'assistant')]);
    expect(keptPublicItems([m('x', 'assistant')])).toEqual([]);
  });

  it('parseContextManagement validates context_management', () => {
    expect(parseContextManagement(undefined)).toBeNull();
    expect(parseContextManagement([])).toBeNull();
    expect(parseContextManagement([{ type: 'compaction', compact_threshold: 5000 }])).toEqual({ compactThreshold: 5000 });
    expect(parseContextManagement([{ type: 'compaction' }], 1234)).toEqual({ compactThreshold: 1234 });
    expect(() => parseContextManagement([{ type: 'truncate' }])).toThrow(GatewayError);
    expect(() => parseContextManagement([{ type: 'compaction', compact_threshold: -1 }])).toThrow(/compact_threshold/);
    expect(() => parseContextManagement({ type: 'compaction' })).toThrow(/array/);
  });

  it('maybeCompact replaces the conversation above the threshold only', async () => {
    const input = longConversation();
    const body = { model: MODEL, instructions: 'You are a travel agent.', input, store: false };
    const turn = await engine.prepare(body);
    const publicItems = turn.inputItems;
    const tokens = estimateTokens(turn.conversation, turn.tools);

    const from = simulator.requests.length;
    expect(await maybeCompact(upstream, turn, { threshold: tokens + 1, publicItems, signal: new AbortController().signal })).toBeUndefined();
    expect(simulator.requests.length).toBe(from);

    const auto = await maybeCompact(upstream, turn, { threshold: tokens, publicItems, signal: new AbortController().signal });
    expect(auto).toBeDefined();
    expect(decodeCompaction(auto!.item)).toBe(SUMMARY);
    expect(auto!.conversation).toEqual([turn.conversation[0], compactionToModelItem(auto!.item), turn.conversation.at(-1)]);
    expect(auto!.tokensBefore).toBe(tokens);
    expect(auto!.tokensAfter).toBeLessThan(tokens / 5);
    expect(auto!.usage.output_tokens).toBeGreaterThan(0);
    // the summarizer saw the instructions and the 19 earlier messages (the developer one merged
    // into the leading system message), then the prompt
    const messages = simulator.requests[from].body.messages;
    expect(messages[0].role).toBe('system');
    expect(messages[0].content).toMatch(/^You are a travel agent\.\s+Message 1 \(developer\)/);
    expect(messages).toHaveLength(20);
    expect(messages.at(-1).content).toBe(COMPACTION_PROMPT);
    // the item, replayed after this turn's input, rebuilds the same conversation
    const replay = applyCompactions([...publicItems, auto!.item]);
    expect(replay).toEqual([auto!.item, publicItems.at(-1)]);
  });

  it('maybeCompact goes on uncompacted when the summarization fails', async () => {
    const turn = await engine.prepare({
      model: MODEL,
      input: [
        { role: 'user', content: `a\n#sim ${JSON.stringify({ rounds: [{ status: 400, error: 'nope' }] })}` },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
      store: false,
    });
    const warnings: unknown[] = [];
    const auto = await maybeCompact(upstream, turn, { threshold: 1, publicItems: turn.inputItems as any, signal: new AbortController().signal, log: { warn: (obj) => warnings.push(obj) } });
    expect(auto).toBeUndefined();
    expect(warnings).toHaveLength(1);
  });
});
