// MCP call benchmark (run after `npm run build`):  node bench/mcp.mjs
//
// The added time of one MCP tool call made through the gateway, against calling the same
// loopback MCP server directly with the official SDK client. Everything runs on 127.0.0.1 in
// this process: a simulator (the model), an MCP server built with the official SDK (Streamable
// HTTP, one `echo` tool), and the gateway (startGateway).
//
//   direct call      = median of client.callTool('echo') over a pooled session
//   turn with call   = median latency of a turn whose model calls mcp__bench__echo then answers
//   turn without     = median latency of a turn answered at once
//   extra round      = median latency of the second upstream round sent straight to the simulator
//   added per call   = (turn with call − turn without − extra round) − direct call
//
// The turns echo the `mcp_list_tools` item in their input (store: false), so no listing happens
// inside the measured turns, as with a client that carries its history. Target: < 2 ms.
// Knobs: BENCH_MCP_N (300).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import pino from 'pino';
import { Pool } from 'undici';
import { z } from 'zod';
import { startGateway } from '../dist/app.js';
import { loadConfig } from '../dist/config/config.js';
import { startSimulator } from '../dist/simulate/server.js';
import { median, round } from './lib/stats.mjs';

const N = Number(process.env.BENCH_MCP_N ?? 300);
const WARMUP = 50;
const RESULTS_FILE = fileURLToPath(new URL('./mcp-results.json', import.meta.url));

async function startMcpServer() {
  const transports = new Map();
  const newServer = () => {
    const server = new McpServer({ name: 'bench', version: '1.0.0' });
    server.tool('echo', 'Echoes its input', { message: z.string() }, async ({ message }) => ({ content: [{ type: 'text', text: `Echo: ${message}` }] }));
    return server;
  };
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId) {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => transports.set(id, transport) });
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${http.address().port}/mcp`, close: () => new Promise((resolve) => { http.closeAllConnections(); http.close(resolve); }) };
}

async function time(fn, n) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const samples = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

const script = (rounds) => `run\n#sim ${JSON.stringify({ rounds })}`;

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-mcp-'));
  const sim = await startSimulator({ port: 0 });
  const mcp = await startMcpServer();
  const config = loadConfig({
    env: {},
    overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', upstream: { url: sim.url }, mcp: { outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } },
  });
  const gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
  const pool = new Pool(gateway.url, { connections: 1 });
  const simPool = new Pool(new URL(sim.url).origin, { connections: 1 });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url)));
    const direct = await time(() => client.callTool({ name: 'echo', arguments: { message: 'hi' } }), N);

    const tool = { type: 'mcp', server_label: 'bench', server_url: mcp.url, require_approval: 'never' };
    const post = async (body) => {
      const res = await pool.request({ path: '/v1/responses', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await res.body.json();
      if (res.statusCode !== 200 || json.status !== 'completed') throw new Error(`turn failed: ${res.statusCode} ${JSON.stringify(json).slice(0, 300)}`);
      return json;
    };
    const withCallScript = script([{ tool_calls: [{ name: 'mcp__bench__echo', arguments: { message: 'hi' } }] }, { text: 'done' }]);
    const first = await post({ model: 'm', input: withCallScript, tools: [tool], store: false });
    const listing = first.output.find((i) => i.type === 'mcp_list_tools');
    if (!first.output.some((i) => i.type === 'mcp_call' && i.output === 'Echo: hi')) throw new Error('the MCP call did not run');
    const input = (text) => [listing, { type: 'message', role: 'user', content: text }];
    const withCall = await time(() => post({ model: 'm', input: input(withCallScript), tools: [tool], store: false }), N);
    const without = await time(() => post({ model: 'm', input: input(script([{ text: 'done' }])), tools: [tool], store: false }), N);

    // the second upstream round of the turn with a call, sent straight to the simulator
    const secondRound = sim.requests.at(-1 - N - WARMUP)?.body;
    const roundBody = JSON.stringify({ ...secondRound, model: 'm' });
    const extraRound = await time(async () => {
      const res = await simPool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: roundBody });
      await res.body.text();
    }, N);

    const gatewayCall = withCall - without - extraRound;
    const added = gatewayCall - direct;
    const results = {
      meta: { date: new Date().toISOString(), node: process.version, n: N, command: 'node bench/mcp.mjs' },
      medianMs: { directCall: round(direct, 3), turnWithCall: round(withCall, 3), turnWithout: round(without, 3), extraUpstreamRound: round(extraRound, 3) },
      gatewayTimePerMcpCallMs: round(gatewayCall, 3),
      addedPerMcpCallMs: round(added, 3),
      target: { addedPerMcpCallMs: '< 2', pass: added < 2 },
    };
    console.log(`MCP call through the gateway vs direct (median of ${N}, loopback):`);
    console.log(`  direct callTool               ${results.medianMs.directCall} ms`);
    console.log(`  turn with one MCP call        ${results.medianMs.turnWithCall} ms`);
    console.log(`  turn without                  ${results.medianMs.turnWithout} ms`);
    console.log(`  extra upstream round (direct) ${results.medianMs.extraUpstreamRound} ms`);
    console.log(`  added per MCP call            ${results.addedPerMcpCallMs} ms   (target < 2 ms: ${added < 2 ? 'PASS' : 'MISS'})`);
    writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await client.close().catch(() => {});
    await pool.close();
    await simPool.close();
    await gateway.close();
    await mcp.close();
    await sim.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
