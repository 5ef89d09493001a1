// How upstream failures reach the client (issue 9, defects 12 and 19): an error body is read up
// to a cap (an endless one cannot hold the gateway), and both dialects report a failure with the
// gateway's own code, never the upstream's. Blocking requests are answered in process
// (test/helpers/in-process.ts); the streamed one goes over a socket.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';

type Json = Record<string, any>;

/** An upstream that answers every request with `status` and a body that never ends. */
async function endlessErrorUpstream(status: number): Promise<{ server: Server; url: string; bytesSent: () => number; closedByClient: () => number }> {
  let sent = 0;
  let closed = 0;
  const chunk = Buffer.alloc(16 * 1024, 'x');
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': 'text/plain' });
    const pump = () => {
      while (!res.destroyed) {
        sent += chunk.length;
        if (!res.write(chunk)) break;
      }
    };
    res.on('drain', pump);
    res.on('close', () => closed++);
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bytesSent: () => sent, closedByClient: () => closed };
}

describe('upstream error bodies are capped (defect 12)', () => {
  for (const status of [400, 503]) {
    it(`an endless ${status} body: the client gets its error promptly, the upstream connection is dropped`, async () => {
      const upstream = await endlessErrorUpstream(status);
      const tg = await startTestGateway({ config: { upstream: { url: upstream.url, maxRetries: 0 } } });
      try {
        const res = await inProcessFetch(tg.gateway)(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi' }) });
        const body = (await res.json()) as Json;
        expect(res.status).toBe(status === 400 ? 400 : 502);
        expect(body.error.code).toBe(status === 400 ? 'upstream_rejected' : 'upstream_error');
        // the quoted text is bounded too
        expect(body.error.message.length).toBeLessThan(2_200);
        for (let waited = 0; upstream.closedByClient() === 0 && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
        expect(upstream.closedByClient()).toBe(1);
        console.log(`endless ${status} body: upstream wrote ${upstream.bytesSent()} bytes before the gateway hung up`);
        // with the gateway reading no more than the cap, the sender stalls at its socket buffers
        expect(upstream.bytesSent()).toBeLessThan(16 * 1024 * 1024);

        const models = await inProcessFetch(tg.gateway)(`${tg.baseURL}/models`);
        expect(models.status).toBe(status === 400 ? 400 : 502);
        expect(((await models.json()) as Json).error.type).toBeTruthy();
      } finally {
        await tg.close();
        upstream.server.closeAllConnections();
        await new Promise((resolve) => upstream.server.close(resolve));
      }
    }, 30_000);
  }
});

describe('one error code for upstream failures, whichever dialect (defect 19)', () => {
  let chat: TestGateway;
  let responses: TestGateway;
  beforeAll(async () => {
    chat = await startTestGateway();
    responses = await startTestGateway({ config: { upstream: { api: 'responses' } } });
  });
  afterAll(async () => {
    await chat.close();
    await responses.close();
  });

  const failing = scripted({ rounds: [{ text: 'a b c d e f g h', error_after_chunks: 3 }] });

  it('a mid-stream upstream error is upstream_error in both dialects (blocking request)', async () => {
    for (const tg of [chat, responses]) {
      const res = await inProcessFetch(tg.gateway)(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: failing }) });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(502);
      expect(body.error.code).toBe('upstream_error');
      expect(body.error.type).toBe('upstream_error');
    }
  });

  it('streamed, both dialects end with the same response.failed error code', async () => {
    const codes: string[] = [];
    for (const tg of [chat, responses]) {
      const events = await readSse(await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: failing, stream: true }) }));
      expect(events.at(-1)!.type).toBe('response.failed');
      codes.push(events.at(-1)!.response.error.code);
    }
    expect(codes[0]).toBe(codes[1]);
  });
});
