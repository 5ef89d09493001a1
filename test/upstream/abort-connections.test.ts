// A stream the gateway abandons (its client left, a turn was cancelled) closes its upstream
// connection and opens no other: undici 7 re-queues an aborted in-flight request and connects again
// for it (nodejs/undici#5845); the transport's pool clients drop it first (src/util/undici-clients.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamTransport } from '../../src/upstream/http.js';

describe('UpstreamTransport: aborted streams', () => {
  let server: http.Server;
  let transport: UpstreamTransport;
  let connections = 0;
  let requests = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests++;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // a generation that goes on until the gateway hangs up, or a short answer
        if (body.includes('"hang"')) res.write('data: {"token":"first"}\n\n');
        else res.end('data: {"ok":true}\n\ndata: [DONE]\n\n');
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    transport = new UpstreamTransport({ baseUrl: `http://127.0.0.1:${port}/v1`, connectTimeoutMs: 5_000, firstTokenTimeoutMs: 5_000, idleTimeoutMs: 5_000, maxRetries: 0, retryBaseDelayMs: 10, connections: 0 });
  });
  afterAll(async () => {
    await transport.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const openConnections = () => new Promise<number>((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count))));

  it('five streams aborted mid-answer close their five connections and open none', async () => {
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    // all five open at once: five connections, each stream started (headers and a first token)
    await Promise.all(controllers.map((controller) => transport.post('/chat/completions', '{"model":"hang"}', controller.signal)));
    expect(connections).toBe(5);
    expect(await openConnections()).toBe(5);

    for (const controller of controllers) controller.abort();
    // closed on the gateway's side; the server sees each close, and undici would connect by now
    for (let waited = 0; waited < 2_000 && (await openConnections()) > 0; waited += 20) await sleep(20);
    await sleep(100);
    expect(await openConnections()).toBe(0);
    expect(connections).toBe(5);
    expect(requests).toBe(5);
  });

  it('the pool serves the next request after the aborts, on a connection of its own', async () => {
    const signal = new AbortController().signal;
    const exchange = await transport.post('/chat/completions', '{"model":"short"}', signal);
    const data: string[] = [];
    for await (const _ of transport.events(exchange, (payload) => void data.push(payload), signal));
    expect(data).toEqual(['{"ok":true}', '[DONE]']);
    expect(requests).toBe(6);
    expect(connections).toBe(6);
  });
});
