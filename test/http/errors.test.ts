// Bad input and failures through raw HTTP: each refused request gets the OpenAI error shape with
// the exact `param`, nothing reaches the model, and the gateway keeps serving afterwards. The
// validation 400s and 404s are answered in process (test/helpers/in-process.ts); the size limit,
// upstream failures and disconnects go over a socket.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';
import { checkStreamInvariants } from '../helpers/spec.js';

let tg: TestGateway;
/** fetch without a socket, into tg's dispatch. */
let inProcess: typeof fetch;

beforeAll(async () => {
  tg = await startTestGateway();
  inProcess = inProcessFetch(tg.gateway);
});

afterAll(async () => {
  await tg.close();
});

type Json = Record<string, any>;

function post(base: string, body: unknown, init: RequestInit = {}, send: typeof fetch = fetch): Promise<Response> {
  return send(`${base}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

async function errorOf(res: Response): Promise<Json> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as Json;
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
  return body.error;
}

/** A plain request still works end to end (blocking and streaming). */
async function expectServesNormally(g: TestGateway = tg): Promise<void> {
  const res = await post(g.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'still alive' }] }) });
  expect(res.status).toBe(200);
  const response = (await res.json()) as Json;
  expect(response.status).toBe('completed');
  expect(response.output[0].content[0].text).toBe('still alive');
  const streamed = await readSse(await post(g.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'still streaming' }] }), stream: true }));
  expect(streamed[streamed.length - 1].type).toBe('response.completed');
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function getResponse(base: string, id: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${base}/responses/${id}`);
  return { status: res.status, body: (await res.json()) as Json };
}

const TOOL = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } };

describe('400 invalid_request_error with the exact param', () => {
  const cases: Array<{ name: string; body: unknown; param: string | null; code?: string; message?: RegExp }> = [
    { name: 'malformed JSON', body: '{"model": "m", "input": ', param: null, code: 'invalid_json' },
    { name: 'empty body', body: '', param: null, code: 'invalid_json' },
    { name: 'body is an array, not an object', body: '[{"model":"m"}]', param: null },
    { name: 'body is a string, not an object', body: '"hello"', param: null },
    { name: 'missing model', body: { input: 'hi' }, param: 'model', code: 'missing_required_parameter' },
    { name: 'model: 5', body: { model: 5, input: 'hi' }, param: 'model', code: 'invalid_type' },
    { name: 'input: 5', body: { model: 'm', input: 5 }, param: 'input', code: 'invalid_type' },
    { name: 'unknown input item type', body: { model: 'm', input: [{ role: 'user', content: 'hi' }, { type: 'telepathy', content: 'x' }] }, param: 'input[1].type', message: /telepathy/ },
    { name: 'message with a bad role', body: { model: 'm', input: [{ type: 'message', role: 'robot', content: 'hi' }] }, param: 'input[0].role' },
    { name: 'temperature: 5', body: { model: 'm', input: 'hi', temperature: 5 }, param: 'temperature' },
    { name: 'stream: "yes"', body: { model: 'm', input: 'hi', stream: 'yes' }, param: 'stream', code: 'invalid_type' },
    { name: 'function tool without a name', body: { model: 'm', input: 'hi', tools: [{ type: 'function' }] }, param: 'tools[0].name' },
    { name: 'tools[1] with a bad name', body: { model: 'm', input: 'hi', tools: [TOOL, { type: 'function', name: 'look up!' }] }, param: 'tools[1].name', message: /look up!/ },
    {
      name: 'tool_choice naming an absent function',
      body: { model: 'm', input: 'hi', tools: [TOOL], tool_choice: { type: 'function', name: 'not_declared' } },
      param: 'tool_choice',
      message: /not_declared/,
    },
    {
      name: 'function_call_output with an unknown call_id',
      body: { model: 'm', input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_nobody_made', output: '42' }] },
      param: 'input[1]',
      message: /call_nobody_made/,
    },
  ];

  it.each(cases)('$name', async ({ body, param, code, message }) => {
    const upstreamBefore = tg.simulator.requests.length;
    const res = await post(tg.baseURL, body, {}, inProcess);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-should-retry')).toBeNull();
    const error = await errorOf(res);
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    if (code) expect(error.code).toBe(code);
    if (message) expect(error.message).toMatch(message);
    // nothing was forwarded to the model
    expect(tg.simulator.requests.length).toBe(upstreamBefore);
  });

  it('the same validation applies to streaming requests (an HTTP error, no SSE)', async () => {
    const res = await post(tg.baseURL, { model: 'm', input: 5, stream: true }, {}, inProcess);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).param).toBe('input');
  });

  it('duplicate function names: code duplicate_tool_name, the message names both', async () => {
    const res = await post(tg.baseURL, { model: 'm', input: 'hi', tools: [TOOL, { ...TOOL, description: 'again' }] }, {}, inProcess);
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.type).toBe('invalid_request_error');
    expect(error.code).toBe('duplicate_tool_name');
    expect(error.param).toBe('tools[1]');
    expect(error.message).toContain('tools[0]');
    expect(error.message).toContain('tools[1]');
    expect(error.message).toContain('lookup');
  });

  it('still serves a normal request afterwards', async () => {
    await expectServesNormally();
  });
});

describe('size limit and unknown things', () => {
  it('413 for a body over limits.maxBodyBytes (declared length and chunked upload)', async () => {
    const small = await startTestGateway({ simulator: tg.simulator, config: { limits: { maxBodyBytes: 1000 } } });
    try {
      const big = JSON.stringify({ model: 'm', input: 'x'.repeat(2000) });
      const res = await post(small.baseURL, big);
      expect(res.status).toBe(413);
      const error = await errorOf(res);
      expect(error.type).toBe('invalid_request_error');
      expect(error.code).toBe('request_too_large');

      // without content-length the limit is enforced while reading
      const bytes = new TextEncoder().encode(big);
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.slice(0, 600));
          controller.enqueue(bytes.slice(600));
          controller.close();
        },
      });
      const res2 = await post(small.baseURL, undefined, { body: chunked, duplex: 'half' } as RequestInit);
      expect(res2.status).toBe(413);
      expect((await errorOf(res2)).code).toBe('request_too_large');

      await expectServesNormally(small);
    } finally {
      await small.close();
    }
  });

  it('404 for an unknown response id (GET, DELETE, input_items)', async () => {
    for (const [method, path] of [
      ['GET', '/responses/resp_unknown'],
      ['DELETE', '/responses/resp_unknown'],
      ['GET', '/responses/resp_unknown/input_items'],
    ]) {
      const res = await inProcess(`${tg.baseURL}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      const error = await errorOf(res);
      expect(error.type).toBe('invalid_request_error');
      expect(error.message).toContain('resp_unknown');
    }
  });

  it('404 for an unknown route', async () => {
    const res = await inProcess(`${tg.baseURL}/nothing/here`);
    expect(res.status).toBe(404);
    const error = await errorOf(res);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain('/v1/nothing/here');
    await expectServesNormally();
  });
});

describe('upstream failures', () => {
  it('upstream down → 502 for blocking and for streaming (JSON error, no SSE, x-should-retry)', async () => {
    const port = await closedPort();
    const down = await startTestGateway({ simulator: tg.simulator, config: { upstream: { url: `http://127.0.0.1:${port}/v1` } } });
    try {
      for (const stream of [false, true]) {
        const res = await post(down.baseURL, { model: 'm', input: 'hello?', stream });
        expect(res.status, `stream: ${stream}`).toBe(502);
        expect(res.headers.get('content-type')).not.toMatch(/event-stream/);
        expect(res.headers.get('x-should-retry')).not.toBeNull();
        const error = await errorOf(res);
        expect(error.type).toBe('upstream_error');
        expect(error.code).toEqual(expect.any(String));
      }
      // the gateway itself is fine: it still validates and answers health checks
      expect((await fetch(`${down.gateway.url}/health`)).status).toBe(200);
      expect((await post(down.baseURL, { input: 'no model' })).status).toBe(400);
    } finally {
      await down.close();
    }
    await expectServesNormally();
  });

  it('upstream 400 → 400 carrying the upstream message (blocking and streaming)', async () => {
    for (const stream of [false, true]) {
      const res = await post(tg.baseURL, {
        model: 'm',
        input: scripted({ rounds: [{ status: 400, error: "This model's maximum context length is 4096 tokens." }] }),
        stream,
      });
      expect(res.status, `stream: ${stream}`).toBe(400);
      const error = await errorOf(res);
      expect(error.type).toBe('invalid_request_error');
      expect(error.message).toContain("This model's maximum context length is 4096 tokens.");
    }
    await expectServesNormally();
  });

  it('upstream 500 once (fail_times 1) → retried, the client sees success', async () => {
    const nonce = `retry-${Date.now()}-${Math.random()}`;
    const before = tg.simulator.requests.length;
    const res = await post(tg.baseURL, { model: 'm', input: scripted({ rounds: [{ status: 500, fail_times: 1, text: `recovered ${nonce}` }] }) });
    expect(res.status).toBe(200);
    const response = (await res.json()) as Json;
    expect(response.status).toBe('completed');
    expect(response.output[0].content[0].text).toBe(`recovered ${nonce}`);
    expect(tg.simulator.requests.length - before).toBe(2);
    await expectServesNormally();
  });

  it('upstream 503 more often than the retries → 502 with x-should-retry', async () => {
    const res = await post(tg.baseURL, { model: 'm', input: scripted({ rounds: [{ status: 503, error: 'overloaded' }] }) });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).not.toBeNull();
    const error = await errorOf(res);
    expect(error.type).toBe('upstream_error');
    expect(error.message).toContain('overloaded');
    await expectServesNormally();
  });

  it('upstream dies mid-stream → exactly one response.failed with an error code; GET shows failed', async () => {
    const res = await post(tg.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'this answer breaks off here', close_after_chunks: 3 }] }), stream: true });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    const terminals = events.filter((e) => ['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(e.type));
    expect(terminals.map((e) => e.type)).toEqual(['response.failed']);
    const failed = events[events.length - 1];
    expect(failed.type).toBe('response.failed');
    expect(failed.response.status).toBe('failed');
    expect(failed.response.error).toEqual({ code: expect.any(String), message: expect.any(String) });
    expect(failed.response.error.code.length).toBeGreaterThan(0);
    expect(checkStreamInvariants(events)).toEqual([]);
    // the partial message is kept, marked incomplete
    expect(failed.response.output.map((item: Json) => [item.type, item.status])).toEqual([['message', 'incomplete']]);

    const stored = await getResponse(tg.baseURL, failed.response.id);
    expect(stored.status).toBe(200);
    expect(stored.body.status).toBe('failed');
    expect(stored.body.error).toEqual(failed.response.error);
    await expectServesNormally();
  });

  it('upstream dies mid-stream, blocking → 502 and the stored response is failed', async () => {
    const res = await post(tg.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'this answer breaks off here', close_after_chunks: 3 }] }) });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).not.toBeNull();
    const error = await errorOf(res);
    const id = /resp_[A-Za-z0-9]+/.exec(error.message)?.[0];
    expect(id).toBeDefined();
    const stored = await getResponse(tg.baseURL, id!);
    expect(stored.body.status).toBe('failed');
    // the HTTP error names the cause; the stored response uses the Responses error vocabulary
    expect(error.code).toBe('upstream_disconnected');
    expect(stored.body.error.code).toBe('server_error');
    await expectServesNormally();
  });

  it('upstream dies inside a function call\'s arguments → the call ends incomplete, then response.failed', async () => {
    // role chunk, call header, first argument fragment, then the connection is cut
    const script = { rounds: [{ tool_calls: [{ name: 'lookup', arguments: { q: 'a long query string here' } }], close_after_chunks: 3 }] };
    const res = await post(tg.baseURL, { model: 'm', tools: [TOOL], input: scripted(script), stream: true });
    const events = await readSse(res);
    expect(checkStreamInvariants(events)).toEqual([]);
    const failed = events[events.length - 1];
    expect(failed.type).toBe('response.failed');
    expect(failed.response.output).toHaveLength(1);
    expect(failed.response.output[0]).toMatchObject({ type: 'function_call', name: 'lookup', status: 'incomplete' });
    await expectServesNormally();
  });
});

describe('client disconnect mid-stream', () => {
  it('aborts the upstream request within 1 s and stores the response as failed (client_disconnected)', async () => {
    // its own simulator, so no earlier abort can satisfy waitForAbort()
    const own = await startTestGateway();
    try {
      const controller = new AbortController();
      const res = await post(own.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'one two three four five six', hang_after_chunks: 3 }] }), stream: true }, { signal: controller.signal });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('\n\n')) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      const first = JSON.parse(text.split('\n\n')[0].split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as Json;
      expect(first.type).toBe('response.created');
      const id = first.response.id as string;

      const abortedAt = Date.now();
      controller.abort();
      await reader.cancel().catch(() => undefined);
      await own.simulator.waitForAbort(1000);
      expect(Date.now() - abortedAt).toBeLessThan(1000);

      let stored: { status: number; body: Json } | undefined;
      for (let i = 0; i < 50; i++) {
        stored = await getResponse(own.baseURL, id);
        if (stored.status === 200 && stored.body.status !== 'in_progress') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(stored?.status).toBe(200);
      expect(stored?.body.status).toBe('failed');
      expect(stored?.body.error?.code).toBe('client_disconnected');
      expect(own.simulator.activeCount()).toBe(0);
      await expectServesNormally(own);
    } finally {
      await own.close();
    }
  });

  it('a blocking request whose client goes away also aborts the upstream request', async () => {
    const own = await startTestGateway();
    try {
      const controller = new AbortController();
      const pending = post(own.baseURL, { model: 'm', input: scripted({ rounds: [{ text: 'one two three', hang_after_chunks: 2 }] }) }, { signal: controller.signal }).catch((e: unknown) => e);
      // wait until the gateway's upstream request is in flight
      for (let i = 0; i < 100 && own.simulator.activeCount() === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(own.simulator.activeCount()).toBe(1);
      controller.abort();
      expect(await pending).toBeInstanceOf(Error);
      await own.simulator.waitForAbort(1000);
      await expectServesNormally(own);
    } finally {
      await own.close();
    }
  });
});
