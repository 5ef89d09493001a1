// A request body in chunks (chatRequestBody) reaches the upstream byte for byte, with its
// Content-Length: joined into one write when small (undici writes each chunk of an iterable body
// in a write of its own), sent chunk by chunk when large (src/upstream/http.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamTransport } from '../../src/upstream/http.js';

interface Received {
  contentLength: string | undefined;
  transferEncoding: string | undefined;
  body: Buffer;
}

describe('UpstreamTransport.post: bodies in chunks', () => {
  let server: http.Server;
  let transport: UpstreamTransport;
  const received: Received[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ contentLength: req.headers['content-length'], transferEncoding: req.headers['transfer-encoding'], body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('data: {"ok":true}\n\ndata: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    transport = new UpstreamTransport({ baseUrl: `http://127.0.0.1:${port}/v1`, connectTimeoutMs: 5_000, firstTokenTimeoutMs: 5_000, idleTimeoutMs: 5_000, maxRetries: 0, retryBaseDelayMs: 10, connections: 0 });
  });
  afterAll(async () => {
    await transport.close();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Posts `chunks`, reads the answer to its end, and returns what the server received. */
  async function send(chunks: Buffer[]): Promise<Received> {
    const signal = new AbortController().signal;
    const exchange = await transport.post('/chat/completions', chunks, signal);
    const data: string[] = [];
    for await (const _ of transport.events(exchange, (payload) => void data.push(payload), signal));
    expect(data).toEqual(['{"ok":true}', '[DONE]']);
    return received.at(-1)!;
  }

  it('a small body of several chunks arrives whole, with its Content-Length', async () => {
    const chunks = ['{"model":"m","messages":[', '{"role":"user","content":"ünïcödé ✓"}', '],"tools":[{"type":"function"}]}'].map((text) => Buffer.from(text));
    const got = await send(chunks);
    const expected = Buffer.concat(chunks);
    expect(got.body.equals(expected)).toBe(true);
    expect(got.contentLength).toBe(String(expected.length));
    expect(got.transferEncoding).toBeUndefined();
  });

  it('a body larger than the join limit goes out chunk by chunk, byte for byte, with its Content-Length', async () => {
    // 3 × 200 KB: over the 256 KB limit, so written as an iterable of chunks
    const chunks = [0, 1, 2].map((i) => Buffer.alloc(200 * 1024, String.fromCharCode(97 + i)));
    const got = await send(chunks);
    const expected = Buffer.concat(chunks);
    expect(got.body.equals(expected)).toBe(true);
    expect(got.contentLength).toBe(String(expected.length));
    expect(got.transferEncoding).toBeUndefined();
  });
});
