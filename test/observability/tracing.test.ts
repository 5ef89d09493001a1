import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { scripted } from '../helpers/gateway.js';
import { STDIO_FIXTURE } from '../helpers/mcp-servers.js';

// request → round → upstream call, and round → tool call spans reach an in-memory exporter.

let sim: Simulator;
let gateway: Gateway;
let dir: string;
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'switchyard-tracing-'));
  const config = loadConfig({ env: {}, overrides: { port: 0, dataDir: dir, logLevel: 'silent', upstream: { url: sim.url }, mcp: { servers: { local: { command: process.execPath, args: [STDIO_FIXTURE] } } } } });
  gateway = await startGateway({ config, logger: pino({ level: 'silent' }), traceExporter: exporter });
}, 60_000);
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OpenTelemetry traces', () => {
  it('records request → round → upstream call and round → MCP tool call', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
    const response = await client.responses.create({
      model: 'm',
      input: scripted({ rounds: [{ tool_calls: [{ name: 'mcp__local__echo', arguments: { message: 'hi' } }] }, { text: 'done' }] }),
      tools: [{ type: 'mcp', server_label: 'local', require_approval: 'never' }],
    } as any);
    expect(response.status).toBe('completed');
    // the request span ends when the response closes, just after the client has read it
    await new Promise((r) => setTimeout(r, 200));
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'POST /v1/responses');
    expect(request).toBeDefined();
    const id = (s: (typeof spans)[number]) => s.spanContext().spanId;
    const parent = (s: (typeof spans)[number]) => s.parentSpanContext?.spanId;
    const rounds = spans.filter((s) => s.name === 'round' && parent(s) === id(request!));
    expect(rounds).toHaveLength(2);
    for (const round of rounds) expect(spans.filter((s) => s.name === 'upstream.call' && parent(s) === id(round))).toHaveLength(1);
    const tools = spans.filter((s) => s.name === 'tool mcp');
    expect(tools).toHaveLength(1);
    expect(parent(tools[0])).toBe(id(rounds.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])[0]));
    expect(tools[0].attributes['switchyard.tool.outcome']).toBe('ok');
    expect(request!.attributes['http.response.status_code']).toBe(200);
    expect(new Set(spans.filter((s) => [request!, ...rounds, ...tools].includes(s)).map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it('exports over OTLP/HTTP when tracing.otlpEndpoint is configured (flushed on shutdown)', async () => {
    const received: Array<{ path: string; type: string | undefined; bytes: number }> = [];
    const collector = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'], bytes });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;
    try {
      const config = loadConfig({ env: { SWITCHYARD_OTLP_ENDPOINT: endpoint }, overrides: { port: 0, dataDir: join(dir, 'otlp'), logLevel: 'silent', upstream: { url: sim.url } } });
      const traced = await startGateway({ config, logger: pino({ level: 'silent' }) });
      const client = new OpenAI({ baseURL: `${traced.url}/v1`, apiKey: 'test', maxRetries: 0 });
      await client.responses.create({ model: 'm', input: 'hello' });
      await new Promise((r) => setTimeout(r, 100));
      await traced.close();
      expect(received.length).toBeGreaterThan(0);
      expect(received[0].path).toBe('/v1/traces');
      expect(received[0].type).toMatch(/^application\/(x-protobuf|json)/);
      expect(received[0].bytes).toBeGreaterThan(0);
    } finally {
      collector.close();
    }
  });
});
