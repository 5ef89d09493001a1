// Tool-path benchmarks (run after `npm run build`):  node bench/tools.mjs
//
// 1. Declaring 1,000 model-visible tools: parseTools + registerTools over 700 functions with
//    small JSON schemas, 100 custom tools with lark grammars and 20 namespaces × 10 members.
//    Median over 50 runs after warm-up. Target < 5 ms.
// 2. Gateway overhead per tool round (tool time excluded): an in-process gateway (startGateway)
//    with a trivial web_search execution, in front of an in-process simulator. A turn whose model
//    calls web_search once and then answers (2 upstream rounds) vs a turn answered at once
//    (1 round); (median with − median without) − the median latency of the extra upstream round
//    sent directly to the simulator = gateway overhead per round.
//
// Knobs (environment): BENCH_TOOLS_RUNS (50), BENCH_ROUND_N (300).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Pool } from 'undici';
import { startGateway } from '../dist/app.js';
import { loadConfig } from '../dist/config/config.js';
import { startSimulator } from '../dist/simulate/server.js';
import { parseTools, registerTools } from '../dist/tools/registry.js';
import { median, percentile, round, sorted } from './lib/stats.mjs';
import { webSearchExecution } from './lib/fake-web-search.mjs';

const RUNS = Number(process.env.BENCH_TOOLS_RUNS ?? 50);
const ROUND_N = Number(process.env.BENCH_ROUND_N ?? 300);
const RESULTS_FILE = fileURLToPath(new URL('./tools-results.json', import.meta.url));
const JSON_HEADERS = { 'content-type': 'application/json' };
const log = (...args) => console.log(...args);

// ---------- 1. declaring 1,000 tools ----------

function declaredTools() {
  const tools = [];
  for (let i = 0; i < 700; i++) {
    tools.push({
      type: 'function',
      name: `fn_${i}`,
      description: `Looks up record ${i} by id and returns its fields.`,
      parameters: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'The record id.' },
          limit: { type: 'integer', minimum: 1, maximum: 100 },
          mode: { type: 'string', enum: ['fast', 'full'] },
        },
        required: ['id'],
        additionalProperties: false,
      },
      strict: i % 2 === 0,
    });
  }
  for (let i = 0; i < 100; i++) {
    tools.push({
      type: 'custom',
      name: `custom_${i}`,
      description: `Evaluates an arithmetic expression (variant ${i}).`,
      format: {
        type: 'grammar',
        syntax: 'lark',
        definition: 'start: expr\nexpr: term (("+" | "-") term)*\nterm: factor (("*" | "/") factor)*\nfactor: NUMBER | "(" expr ")"\n%import common.NUMBER\n%ignore " "',
      },
    });
  }
  for (let n = 0; n < 20; n++) {
    const members = [];
    for (let m = 0; m < 10; m++) {
      members.push({
        type: 'function',
        name: `member_${m}`,
        description: `Member ${m} of namespace ${n}.`,
        parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      });
    }
    tools.push({ type: 'namespace', name: `ns_${n}`, description: `Namespace ${n}: a group of related tools.`, tools: members });
  }
  return tools;
}

function benchDeclare() {
  const tools = declaredTools();
  const ctx = { executionFor: () => undefined, logOnce: () => {} };
  const once = () => {
    const t0 = performance.now();
    const registry = registerTools(parseTools(tools), ctx);
    const ms = performance.now() - t0;
    if (registry.size !== 1000) throw new Error(`expected 1000 registered tools, got ${registry.size}`);
    return ms;
  };
  for (let i = 0; i < 20; i++) once(); // warm-up (JIT)
  const samples = [];
  for (let i = 0; i < RUNS; i++) samples.push(once());
  const s = sorted(samples);
  return {
    declarations: tools.length,
    modelVisibleTools: 1000,
    runs: RUNS,
    medianMs: round(median(samples), 4),
    p90Ms: round(percentile(s, 90), 4),
    minMs: round(s[0], 4),
    maxMs: round(s[s.length - 1], 4),
  };
}

// ---------- 2. gateway overhead per tool round ----------

const script = (rounds) => `search please\n#sim ${JSON.stringify({ rounds })}`;
const WITH_TOOL = script([{ tool_calls: [{ name: 'web_search', arguments: { query: 'switchyard' } }] }, { text: 'Found it.' }]);
const WITHOUT_TOOL = script([{ text: 'Found it.' }]);

async function benchRound() {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-tools-'));
  const sim = await startSimulator({ port: 0 });
  const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', upstream: { url: sim.url } } });
  const gateway = await startGateway({ config, logger: pino({ level: 'silent' }), executions: { web_search: () => webSearchExecution() } });
  const gwPool = new Pool(gateway.url, { connections: 1 });
  const simPool = new Pool(new URL(sim.url).origin, { connections: 1 });
  try {
    const turnBody = (input) => JSON.stringify({ model: 'switchyard-sim', input, tools: [{ type: 'web_search' }], stream: false, store: false });
    const withBody = turnBody(WITH_TOOL);
    const withoutBody = turnBody(WITHOUT_TOOL);

    const timed = async (pool, path, body) => {
      const t0 = process.hrtime.bigint();
      const res = await pool.request({ path, method: 'POST', headers: JSON_HEADERS, body });
      const text = await res.body.text();
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
      return { ms, text };
    };

    // sanity + capture the exact upstream requests the gateway sends (from the simulator's log)
    const before = sim.requests.length;
    const withTurn = JSON.parse((await timed(gwPool, '/v1/responses', withBody)).text);
    const types = withTurn.output.map((i) => i.type).join(',');
    if (withTurn.status !== 'completed' || types !== 'web_search_call,message') throw new Error(`unexpected tool turn: status ${withTurn.status}, output ${types}`);
    const captured = sim.requests.slice(before).map((r) => r.body);
    if (captured.length !== 2) throw new Error(`expected 2 upstream rounds, saw ${captured.length}`);
    const before2 = sim.requests.length;
    const withoutTurn = JSON.parse((await timed(gwPool, '/v1/responses', withoutBody)).text);
    if (withoutTurn.status !== 'completed' || withoutTurn.output.map((i) => i.type).join(',') !== 'message') throw new Error('unexpected plain turn');
    const capturedPlain = sim.requests.slice(before2).map((r) => r.body);
    // the round the tool adds: round 1 (tool result in the conversation), as the gateway sent it
    const round0 = JSON.stringify(captured[0]);
    const round1 = JSON.stringify(captured[1]);
    const plain0 = JSON.stringify(capturedPlain[0]);

    const samples = { withTool: [], withoutTool: [], directRound1: [], directRound0: [], directPlain: [] };
    const iteration = async (record) => {
      const a = await timed(gwPool, '/v1/responses', withBody);
      const b = await timed(gwPool, '/v1/responses', withoutBody);
      const c = await timed(simPool, '/v1/chat/completions', round1);
      const d = await timed(simPool, '/v1/chat/completions', round0);
      const e = await timed(simPool, '/v1/chat/completions', plain0);
      if (record) {
        samples.withTool.push(a.ms);
        samples.withoutTool.push(b.ms);
        samples.directRound1.push(c.ms);
        samples.directRound0.push(d.ms);
        samples.directPlain.push(e.ms);
      }
    };
    for (let i = 0; i < 100; i++) await iteration(false); // warm-up
    for (let i = 0; i < ROUND_N; i++) await iteration(true); // interleaved: drift hits all alike

    const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
    const addedByToolRound = m.withTool - m.withoutTool;
    return {
      n: ROUND_N,
      medianMs: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v, 4)])),
      turnWithToolMinusWithoutMs: round(addedByToolRound, 4),
      // the figure asked for: (with − without) − the direct latency of the added round
      gatewayOverheadPerRoundMs: round(addedByToolRound - m.directRound1, 4),
      // cross-check: subtract what the two tool-turn rounds minus the plain round cost directly
      gatewayOverheadPerRoundPairedMs: round(addedByToolRound - (m.directRound0 + m.directRound1 - m.directPlain), 4),
    };
  } finally {
    await gwPool.close();
    await simPool.close();
    await gateway.close();
    await sim.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  // hard bound: a hung gateway must not hang the benchmark (everything runs in this process)
  setTimeout(() => {
    console.error('tools benchmark exceeded 3 minutes: stopping');
    process.exit(1);
  }, 3 * 60_000).unref();
  log(`Switchyard tool benchmarks — node ${process.version}, ${cpus().length} CPUs`);
  const declare = benchDeclare();
  log(`\nDeclaring 1,000 tools (${declare.declarations} declarations: 700 functions, 100 custom/lark, 20 namespaces × 10)`);
  log(`  parseTools + registerTools: median ${declare.medianMs} ms (p90 ${declare.p90Ms}, min ${declare.minMs}, max ${declare.maxMs}) over ${declare.runs} runs`);
  const declarePass = declare.medianMs < 5;
  log(`  target < 5 ms: ${declarePass ? 'PASS' : 'MISS'}`);

  const roundResult = await benchRound();
  const r = roundResult.medianMs;
  log(`\nGateway overhead per tool round (blocking turns, c=1, n=${roundResult.n} each, medians)`);
  log(`  turn with one web_search round : ${r.withTool.toFixed(3)} ms`);
  log(`  turn without                   : ${r.withoutTool.toFixed(3)} ms`);
  log(`  difference                     : ${roundResult.turnWithToolMinusWithoutMs.toFixed(3)} ms`);
  log(`  direct: round 1 (added round)  : ${r.directRound1.toFixed(3)} ms  (round 0 ${r.directRound0.toFixed(3)}, plain ${r.directPlain.toFixed(3)})`);
  log(`  gateway overhead per round     : ${roundResult.gatewayOverheadPerRoundMs.toFixed(3)} ms  (paired cross-check ${roundResult.gatewayOverheadPerRoundPairedMs.toFixed(3)} ms)`);

  const results = {
    meta: { date: new Date().toISOString(), node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, command: 'node bench/tools.mjs' },
    declare: { ...declare, target: '< 5 ms', result: declarePass ? 'PASS' : 'MISS' },
    round: roundResult,
  };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nwrote ${RESULTS_FILE}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`tools benchmark failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
