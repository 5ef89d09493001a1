// x-request-id (issue #16 moved it from a setHeader at the request's start into the head itself):
// every kind of answer carries exactly one, the client's own when sane, the gateway's over an
// upstream's, on blocking, streamed, error, Messages, pass-through and implicit heads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let tg: TestGateway;
beforeAll(async () => {
  tg = await startTestGateway();
});
afterAll(async () => {
  await tg.close();
});

async function send(path: string, init: RequestInit = {}): Promise<{ status: number; id: string | null; raw: string[] }> {
  const res = await fetch(`${tg.gateway.url}${path}`, init);
  await res.text();
  // getSetCookie-style raw access is not there for other names: a duplicated header would be joined with ", "
  return { status: res.status, id: res.headers.get('x-request-id'), raw: [...res.headers].filter(([name]) => name === 'x-request-id').map(([, value]) => value) };
}

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('x-request-id', () => {
  it('is on every kind of answer, once, a fresh UUID each time', async () => {
    const answers = [
      await send('/v1/responses', post({ model: 'switchyard-sim', input: 'hello', store: false })),
      await send('/v1/responses', post({ model: 'switchyard-sim', input: 'hello', store: false, stream: true })),
      await send('/v1/responses', post({ model: 'switchyard-sim', input: 42 })),
      await send('/v1/nowhere'),
      await send('/v1/responses', { method: 'PUT' }),
      await send('/health'),
      await send('/metrics'),
      await send('/v1/messages', post({ model: 'switchyard-sim', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], stream: true }, { 'anthropic-version': '2023-06-01' })),
      await send('/v1/chat/completions', post({ model: 'switchyard-sim', messages: [{ role: 'user', content: 'hi' }] })),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 404, 405, 200, 200, 200, 200]);
    for (const answer of answers) {
      expect(answer.id).toMatch(UUID);
      expect(answer.raw).toHaveLength(1);
    }
    expect(new Set(answers.map((a) => a.id)).size).toBe(answers.length);
  });

  it("keeps the client's own id when it is sane, on a stream and on an error too", async () => {
    const headers = { 'x-request-id': 'client-7.a:b' };
    expect((await send('/v1/responses', post({ model: 'switchyard-sim', input: 'hello', stream: true }, headers))).id).toBe('client-7.a:b');
    expect((await send('/v1/nowhere', { headers })).id).toBe('client-7.a:b');
    expect((await send('/v1/responses', post({ model: 'switchyard-sim', input: 'hello' }, { 'x-request-id': 'two words' }))).id).toMatch(UUID);
  });
});

describe('GatewayResponse.writeHead', () => {
  it('puts the request id in every form of head: implicit, with a reason, as an array, over a route-given one', async () => {
    const { createServer } = await import('node:http');
    const { GatewayRequest, GatewayResponse } = await import('../../src/observability/request-context.js');
    const server = createServer({ IncomingMessage: GatewayRequest, ServerResponse: GatewayResponse }, (req, res) => {
      (req as InstanceType<typeof GatewayRequest>).requestId = `id-${req.url!.slice(1)}`;
      if (req.url === '/implicit') res.end('x');
      else if (req.url === '/reason') res.writeHead(201, 'Made', { 'content-type': 'text/plain', 'X-Request-Id': 'route-given' }).end('x');
      else if (req.url === '/array') res.writeHead(200, ['content-type', 'text/plain', 'x-extra', '1']).end('x');
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('x');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      for (const [path, status] of [['implicit', 200], ['reason', 201], ['array', 200], ['object', 200]] as const) {
        const res = await fetch(`http://127.0.0.1:${port}/${path}`);
        expect(res.status).toBe(status);
        expect([...res.headers].filter(([name]) => name === 'x-request-id')).toEqual([['x-request-id', `id-${path}`]]);
        if (path === 'reason') expect(res.statusText).toBe('Made');
        if (path === 'array') expect(res.headers.get('x-extra')).toBe('1');
        expect(await res.text()).toBe('x');
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
