// Tenants: every stored object belongs to the key's tenant. Two keys: each sees only its own
// responses, conversations, background runs (also through WebSocket mode and stream resume),
// files and vector stores; another tenant's id is a 404 on every route; lists show one's own.
// HTTP requests are answered in process (test/helpers/in-process.ts), key check included; WebSocket
// mode goes over a socket.
import OpenAI, { NotFoundError, toFile } from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CODE_INTERPRETER_CONFIG } from '../../src/containers/config.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';
import { sandboxDir, sandboxSkipReason, SANDBOX_PYTHON } from '../helpers/sandbox.js';

const ALICE = 'sk-alice-0123456789abcdef';
const BOB = 'sk-bob-0123456789abcdef01';

let gw: TestGateway;
let alice: OpenAI;
let bob: OpenAI;

beforeAll(async () => {
  gw = await startTestGateway({ config: { auth: { keys: [{ name: 'alice', key: ALICE }, { name: 'bob', key: BOB }] } } });
  alice = new OpenAI({ baseURL: gw.baseURL, apiKey: ALICE, maxRetries: 0, fetch: inProcessFetch(gw.gateway) });
  bob = new OpenAI({ baseURL: gw.baseURL, apiKey: BOB, maxRetries: 0, fetch: inProcessFetch(gw.gateway) });
});
afterAll(async () => {
  await gw?.close();
});

const notFound = async (promise: Promise<unknown>): Promise<void> => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected a 404').toBeInstanceOf(NotFoundError);
};

/** A raw call with a key (routes the SDK has no method for). */
const call = (key: string, method: string, path: string, body?: unknown) =>
  inProcessFetch(gw.gateway)(path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

describe('responses', () => {
  it("another tenant's response is a 404 on get, input_items, delete, cancel and previous_response_id", async () => {
    const mine = await alice.responses.create({ model: 'sim', input: 'remember 42' });
    await notFound(bob.responses.retrieve(mine.id));
    await notFound(bob.responses.inputItems.list(mine.id));
    await notFound(bob.responses.delete(mine.id));
    await notFound(bob.responses.cancel(mine.id));
    const continued = await bob.responses.create({ model: 'sim', input: 'what was it?', previous_response_id: mine.id }).catch((e: unknown) => e);
    expect(continued).toBeInstanceOf(NotFoundError);
    expect((continued as NotFoundError).code).toBe('previous_response_not_found');
    // the owner still has all of it
    expect((await alice.responses.retrieve(mine.id)).id).toBe(mine.id);
    expect((await alice.responses.inputItems.list(mine.id)).data).toHaveLength(1);
    expect((await alice.responses.create({ model: 'sim', input: 'next', previous_response_id: mine.id })).status).toBe('completed');
    expect((await alice.responses.delete(mine.id)) as unknown).toMatchObject({ deleted: true });
  });

  it("item_reference does not reach another tenant's items", async () => {
    const mine = await alice.responses.create({ model: 'sim', input: 'secret' });
    const itemId = mine.output[0].id!;
    const err = await bob.responses.create({ model: 'sim', input: [{ type: 'item_reference', id: itemId }] as never }).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(400);
    expect((err as { code?: string }).code).toBe('item_not_found');
    expect((await alice.responses.create({ model: 'sim', input: [{ type: 'item_reference', id: itemId }] as never })).status).toBe('completed');
  });
});

describe('background runs', () => {
  it("another tenant can neither retrieve, resume the stream of, nor cancel a background run", async () => {
    const run = await alice.responses.create({ model: 'sim', input: scripted({ rounds: [{ text: 'slow answer', delay_ms: 60 }] }), background: true });
    await notFound(bob.responses.retrieve(run.id));
    const resumed = await call(BOB, 'GET', `/v1/responses/${run.id}?stream=true&starting_after=0`);
    expect(resumed.status).toBe(404);
    await notFound(bob.responses.cancel(run.id));
    // the owner resumes its stream to the end
    const own = await call(ALICE, 'GET', `/v1/responses/${run.id}?stream=true`);
    expect(own.status).toBe(200);
    const text = await own.text();
    expect(text).toContain('response.completed');
    expect((await alice.responses.retrieve(run.id)).status).toBe('completed');
  });
});

describe('conversations', () => {
  it("another tenant's conversation is a 404 on every route and as the `conversation` of a response", async () => {
    const conversation = await alice.conversations.create({ items: [{ type: 'message', role: 'user', content: 'hello' }] });
    await notFound(bob.conversations.retrieve(conversation.id));
    await notFound(bob.conversations.update(conversation.id, { metadata: { a: 'b' } }));
    await notFound(bob.conversations.items.list(conversation.id));
    await notFound(bob.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'x' }] }));
    const items = await alice.conversations.items.list(conversation.id);
    await notFound(bob.conversations.items.retrieve(items.data[0].id!, { conversation_id: conversation.id }));
    await notFound(bob.conversations.items.delete(items.data[0].id!, { conversation_id: conversation.id }));
    const turn = await bob.responses.create({ model: 'sim', input: 'hi', conversation: conversation.id }).catch((e: unknown) => e);
    expect(turn).toBeInstanceOf(NotFoundError);
    expect((turn as NotFoundError).code).toBe('conversation_not_found');
    await notFound(bob.conversations.delete(conversation.id));
    // untouched: still one item, and alice's turn goes on in it
    expect((await alice.conversations.items.list(conversation.id)).data).toHaveLength(1);
    expect((await alice.responses.create({ model: 'sim', input: 'hi', conversation: conversation.id })).status).toBe('completed');
    expect((await alice.conversations.items.list(conversation.id)).data.length).toBe(3);
  });
});

describe('WebSocket mode', () => {
  const open = async (key: string): Promise<WebSocket> => {
    const ws = new WebSocket(`${gw.gateway.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return ws;
  };
  /** Sends one response.create; resolves with the terminal or error event. */
  const turn = (ws: WebSocket, params: Record<string, unknown>) =>
    new Promise<Record<string, any>>((resolve) => {
      const onMessage = (data: WebSocket.RawData) => {
        const event = JSON.parse(String(data));
        if (event.type === 'error' || event.type === 'response.completed' || event.type === 'response.failed') {
          ws.off('message', onMessage);
          resolve(event);
        }
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ type: 'response.create', model: 'sim', ...params }));
    });

  it("continuing another tenant's stored response over a socket is previous_response_not_found; one's own works", async () => {
    const mine = await alice.responses.create({ model: 'sim', input: 'stored over HTTP' });
    const bobWs = await open(BOB);
    const refused = await turn(bobWs, { input: 'continue', previous_response_id: mine.id });
    expect(refused.type).toBe('error');
    expect(refused.error.code).toBe('previous_response_not_found');
    bobWs.close();
    const aliceWs = await open(ALICE);
    const done = await turn(aliceWs, { input: 'continue', previous_response_id: mine.id });
    expect(done.type).toBe('response.completed');
    // stored by the socket turn: alice's, not bob's
    await notFound(bob.responses.retrieve(done.response.id));
    expect((await alice.responses.retrieve(done.response.id)).previous_response_id).toBe(mine.id);
    aliceWs.close();
  });
});

describe('files and vector stores', () => {
  it("another tenant's file and vector store are 404s and absent from its lists", async () => {
    const file = await alice.files.create({ file: await toFile(Buffer.from('tenant secret'), 'secret.txt'), purpose: 'assistants' });
    await notFound(bob.files.retrieve(file.id));
    await notFound(bob.files.content(file.id));
    await notFound(bob.files.delete(file.id));
    expect((await bob.files.list()).data.map((f) => f.id)).not.toContain(file.id);
    expect((await alice.files.list()).data.map((f) => f.id)).toContain(file.id);

    // bob cannot attach alice's file to his own store
    const bobStore = await bob.vectorStores.create({ name: 'bob' });
    await notFound(bob.vectorStores.files.create(bobStore.id, { file_id: file.id }));

    const store = await alice.vectorStores.create({ name: 'alice', file_ids: [file.id] });
    await notFound(bob.vectorStores.retrieve(store.id));
    await notFound(bob.vectorStores.search(store.id, { query: 'secret' }));
    await notFound(bob.vectorStores.delete(store.id));
    expect((await bob.vectorStores.list()).data.map((s) => s.id)).toEqual([bobStore.id]);
    expect((await alice.vectorStores.list()).data.map((s) => s.id)).toEqual([store.id]);

    // file_search with alice's store id, asked by bob: never alice's content
    const searched = await bob.responses
      .create({ model: 'sim', input: scripted({ rounds: [{ tool_calls: [{ name: 'file_search', arguments: { queries: ['secret'] } }] }, { text: 'done' }] }), tools: [{ type: 'file_search', vector_store_ids: [store.id] }], include: ['file_search_call.results'] })
      .catch((e: unknown) => e);
    const leaked = JSON.stringify(searched).includes('tenant secret');
    expect(leaked).toBe(false);
  });
});

describe.skipIf(sandboxSkipReason !== undefined)(`containers${sandboxSkipReason ? ` (${sandboxSkipReason})` : ''}`, () => {
  let cgw: TestGateway;
  let folder: ReturnType<typeof sandboxDir>;
  beforeAll(async () => {
    folder = sandboxDir();
    cgw = await startTestGateway({
      config: {
        auth: { keys: [{ name: 'alice', key: ALICE }, { name: 'bob', key: BOB }] },
        codeInterpreter: { ...DEFAULT_CODE_INTERPRETER_CONFIG, python: SANDBOX_PYTHON, dir: folder.dir, poolSize: 1, uidBase: 240_000 + (process.pid % 1000) * 20 },
      },
    });
  });
  afterAll(async () => {
    await cgw?.close();
    folder?.remove();
  });

  it("another tenant's container is a 404 and absent from its list", async () => {
    const a = new OpenAI({ baseURL: cgw.baseURL, apiKey: ALICE, maxRetries: 0 });
    const b = new OpenAI({ baseURL: cgw.baseURL, apiKey: BOB, maxRetries: 0 });
    const container = await a.containers.create({ name: 'alice' });
    await notFound(b.containers.retrieve(container.id));
    await notFound(b.containers.files.list(container.id));
    await notFound(b.containers.delete(container.id));
    expect((await b.containers.list()).data.map((c) => c.id)).not.toContain(container.id);
    expect((await a.containers.list()).data.map((c) => c.id)).toContain(container.id);
    expect((await a.containers.retrieve(container.id)).id).toBe(container.id);
  });
});
