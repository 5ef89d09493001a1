// Hot-path targets beyond bench/run.mjs (issue 16), run by `npm run bench` after it:
//
//   node bench/hotpath.mjs            (after `npm run build`)
//
// 1. store: true (SQLite, WAL) throughput at concurrency 64 vs direct   — target ≥ 40 % of direct
// 2. Codex request bodies (test/fixtures/codex) through the gateway vs the exact upstream request
//    it sent, replayed directly: added median at c=1 per body, throughput ratio at c=64
// 3. a 5-round gateway tool loop and a client function round trip        — ≤ 0.2 ms per round beyond the upstream
// 4. conversation growth: turns continuing previous_response_id chains of depth 1, 10, 100,
//    1,000 (each stored turn ≈ 5 KB) — added latency at depth 1,000 within 2× of depth 1
// 5. a long streamed answer (600 tokens, c=8): the gateway's CPU per token, and its throughput
//    against direct — no target in the issue, a figure for the per-token path every real answer takes
//
// 1, 2 and 5 use a simulator child and a gateway child (`node dist/cli.js serve`, SQLite data dir;
// the upstream requests are read back from the simulator over IPC); 4 a gateway child of its own
// in front of a replaying upstream child (bench/lib/replay-upstream.mjs); 3 an in-process
// simulator and gateway (startGateway). See bench/README.md for the method.
//
// Knobs: BENCH_HOTPATH_SECONDS (4, measured seconds per load run), BENCH_HOTPATH_WARMUP (1),
// BENCH_SLICES (4: a load run measured in slices alternating with the runs it is compared with),
// BENCH_JIT_WARMUP_SECONDS (4: the gateway child's first load, per workload, discarded; the
// in-process tool rounds discard at least as long per gateway workload),
// BENCH_HOTPATH_N (200, sequential samples per side), BENCH_HOTPATH_ONLY (store,codex,tools,growth,tokens),
// BENCH_HOTPATH_RESULTS (bench/hotpath-results.json).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Pool } from 'undici';
import { startGateway } from '../dist/app.js';
import { loadConfig } from '../dist/config/config.js';
import { startSimulator } from '../dist/simulate/server.js';
import { measure, measureInterleaved } from './lib/load.mjs';
import { cpuMicros, freePort, installCleanupHooks, startBareProxyChild, startGatewayChild, startReplayUpstreamChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { median, round } from './lib/stats.mjs';
import { webSearchExecution } from './lib/fake-web-search.mjs';
import { cloneChains } from './lib/chains.mjs';
import { startBareProxy } from './lib/bare-proxy.mjs';

const SECONDS = Number(process.env.BENCH_HOTPATH_SECONDS ?? 4);
const WARMUP = Number(process.env.BENCH_HOTPATH_WARMUP ?? 1);
/** Each load run measured in this many slices, alternating with the runs it is compared with. */
const SLICES = Number(process.env.BENCH_SLICES ?? 4);
const JIT_WARMUP = Number(process.env.BENCH_JIT_WARMUP_SECONDS ?? 4);
/**
 * Discarded rounds before the tool-round samples: at least this many, and at least
 * BENCH_JIT_WARMUP_SECONDS per gateway workload, as the load runs have (V8 optimises the last of a
 * turn's functions only after thousands of turns; 300 rounds left the client round trip at 0.31 ms
 * per round against 0.21 after 3,000).
 */
const TOOL_WARM = 300;
const N = Number(process.env.BENCH_HOTPATH_N ?? 200);
const ONLY = new Set((process.env.BENCH_HOTPATH_ONLY ?? 'store,codex,tools,growth,tokens').split(',').map((x) => x.trim()));
const RESULTS_FILE = process.env.BENCH_HOTPATH_RESULTS ?? fileURLToPath(new URL('./hotpath-results.json', import.meta.url));
const MODEL = 'switchyard-sim';
const JSON_HEADERS = { 'content-type': 'application/json' };
const CODEX_DIR = fileURLToPath(new URL('../test/fixtures/codex/', import.meta.url));
/** The long answer of section 5: the simulator echoes the input, one token per word. */
const LONG_ANSWER_WORDS = 600;
const LONG_INPUT = Array.from({ length: LONG_ANSWER_WORDS }, (_, i) => `w${i}`).join(' ');
const CODEX_BODIES = ['fallback-tool/0001', 'fallback-tool/0002', 'catalog-apply-patch/0001', 'catalog-apply-patch/0002'];
const log = (...args) => console.log(...args);
const fmt = (v, d = 3) => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(d));

// ---------- shared helpers ----------

/** POST and read the whole body; ms from the call to the end of the body. */
async function timed(pool, path, body) {
  const t0 = process.hrtime.bigint();
  const res = await pool.request({ path, method: 'POST', headers: JSON_HEADERS, body });
  const text = await res.body.text();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return { ms, text };
}

/**
 * Alternates the given request makers (drift hits all alike): discarded rounds, at least `warm` and
 * at least `warmSeconds`, then `n`; medians.
 */
async function interleaved(makers, warm, n, warmSeconds = 0) {
  const samples = Object.fromEntries(Object.keys(makers).map((k) => [k, []]));
  const pass = async (keep) => {
    for (const [k, make] of Object.entries(makers)) {
      const { ms } = await make();
      if (keep) samples[k].push(ms);
    }
  };
  const warmUntil = performance.now() + warmSeconds * 1000;
  for (let i = 0; i < warm || performance.now() < warmUntil; i++) await pass(false);
  for (let i = 0; i < n; i++) await pass(true);
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
}

function completedStream(text) {
  if (!text.includes('event: response.completed')) throw new Error(`stream did not complete: ${text.slice(-400)}`);
}

// ---------- 1, 2 and 4: children ----------

async function childSections(tmpRoot, results) {
  const sim = await startSimulatorChild();
  const gw = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'data') });
  const direct = `http://127.0.0.1:${sim.port}`;
  const cpu = () => ({ gw: cpuMicros(gw.pid) });
  /** Load runs (`[url, body]` each) at `connections`, measured in alternating slices (bench/lib/load.mjs). */
  const loads = async (connections, ...runs) => {
    const specs = runs.map(([url, body]) => ({ url, body, connections, before: cpu, after: cpu }));
    const measured = await measureInterleaved(specs, { slices: SLICES, seconds: SECONDS, warmupSeconds: WARMUP / SLICES });
    return measured.map((r, i) => {
      const url = specs[i].url;
      if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return { rps: round(r.rps, 1), requests: r.requests, p50Ms: round(r.latencyMs.p50, 3), gatewayCpuUsPerRequest: url.startsWith(gw.url) ? round(r.deltas.gw / r.requests, 1) : null };
    });
  };
  try {
    // steady state, not the JIT's ramp (as bench/run.mjs): the fresh gateway child first gets some
    // load of every workload it is measured with, discarded; the simulator warms up with it
    log(`\nJIT warm-up: ${JIT_WARMUP}s of each workload at concurrency 32 (discarded) …`);
    const workloads = [{ model: MODEL, input: 'hello', stream: false, store: false }, { model: MODEL, input: 'hello', stream: false, store: true }];
    if (ONLY.has('codex')) for (const name of CODEX_BODIES) workloads.push(readFileSync(join(CODEX_DIR, `${name}-request.json`), 'utf8'));
    if (ONLY.has('tokens')) workloads.push({ model: MODEL, input: LONG_INPUT, stream: true, store: false });
    for (const body of workloads) await measure({ url: `${gw.url}/v1/responses`, body, connections: 32, seconds: JIT_WARMUP, warmupSeconds: 0 });

    if (ONLY.has('store')) {
      log(`\nstore: true (SQLite WAL) vs store: false vs direct, blocking, c=64 (${WARMUP}s + ${SECONDS}s each, in ${SLICES} alternating slices) …`);
      const gwBody = (store) => ({ model: MODEL, input: 'hello', stream: false, store });
      // sanity: a stored response can be read back
      const pool = new Pool(gw.url, { connections: 1 });
      const stored = JSON.parse((await timed(pool, '/v1/responses', JSON.stringify(gwBody(true)))).text);
      const back = await pool.request({ path: `/v1/responses/${stored.id}`, method: 'GET' });
      await back.body.text();
      await pool.close();
      if (back.statusCode !== 200) throw new Error(`store: true sanity: GET ${stored.id} answered ${back.statusCode}`);
      const runs = {};
      [runs.direct, runs.gatewayStoreFalse, runs.gatewayStoreTrue] = await loads(
        64,
        [`${direct}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hello' }], stream: false }],
        [`${gw.url}/v1/responses`, gwBody(false)],
        [`${gw.url}/v1/responses`, gwBody(true)],
      );
      for (const [k, v] of Object.entries(runs)) log(`   ${k.padEnd(18)} ${fmt(v.rps, 0).padStart(7)} req/s  p50 ${fmt(v.p50Ms)} ms${v.gatewayCpuUsPerRequest !== null ? `  gateway CPU ${fmt(v.gatewayCpuUsPerRequest, 0)} µs/req` : ''}`);
      results.store = { runs, storeTrueRatio: round(runs.gatewayStoreTrue.rps / runs.direct.rps, 3), storeFalseRatio: round(runs.gatewayStoreFalse.rps / runs.direct.rps, 3) };
    }

    if (ONLY.has('codex')) {
      log(`\nCodex request bodies (streaming, store: false) vs the upstream request replayed directly …`);
      // the floor: each body's upstream request through the bare pass-through proxy (a child, as the
      // gateway) — one HTTP hop with the upstream request's bytes, no Responses work
      const proxy = await startBareProxyChild(direct);
      const gwPool = new Pool(gw.url, { connections: 1 });
      const simPool = new Pool(direct, { connections: 1 });
      const proxyPool = new Pool(proxy.url, { connections: 1 });
      const perBody = {};
      let heaviest = null;
      try {
        for (const name of CODEX_BODIES) {
          const body = readFileSync(join(CODEX_DIR, `${name}-request.json`), 'utf8');
          completedStream((await timed(gwPool, '/v1/responses', body)).text);
          const [upstream] = await sim.lastRequests(1);
          const upstreamBody = JSON.stringify(upstream);
          if (!(await timed(simPool, '/v1/chat/completions', upstreamBody)).text.includes('data: [DONE]')) throw new Error(`${name}: the direct replay did not complete`);
          const m = await interleaved(
            { gateway: () => timed(gwPool, '/v1/responses', body), direct: () => timed(simPool, '/v1/chat/completions', upstreamBody), proxy: () => timed(proxyPool, '/v1/chat/completions', upstreamBody) },
            30,
            Math.max(20, Math.round(N / 2)),
          );
          perBody[name] = { requestBytes: body.length, upstreamBytes: upstreamBody.length, gatewayMedianMs: round(m.gateway, 4), directMedianMs: round(m.direct, 4), addedMedianMs: round(m.gateway - m.direct, 4), bareProxyAddedMedianMs: round(m.proxy - m.direct, 4) };
          log(`   ${name.padEnd(26)} ${String(body.length).padStart(6)} B  gateway ${fmt(m.gateway)} ms  direct ${fmt(m.direct)} ms  added ${fmt(m.gateway - m.direct)} ms; bare proxy added ${fmt(m.proxy - m.direct)} ms`);
          if (heaviest === null || body.length > heaviest.body.length) heaviest = { name, body, upstreamBody };
        }
      } finally {
        await gwPool.close();
        await simPool.close();
        await proxyPool.close();
        await sim.lastRequests(0);
      }
      const [dRun, gRun] = await loads(64, [`${direct}/v1/chat/completions`, heaviest.upstreamBody], [`${gw.url}/v1/responses`, heaviest.body]);
      await sim.lastRequests(0);
      log(`   c=64 ${heaviest.name}: direct ${fmt(dRun.rps, 0)} req/s, gateway ${fmt(gRun.rps, 0)} req/s (gateway CPU ${fmt(gRun.gatewayCpuUsPerRequest, 0)} µs/req)`);
      const meanOf = (key) => Object.values(perBody).reduce((sum, x) => sum + x[key], 0) / CODEX_BODIES.length;
      results.codex = { perBody, meanAddedMedianMs: round(meanOf('addedMedianMs'), 4), bareProxyMeanAddedMedianMs: round(meanOf('bareProxyAddedMedianMs'), 4), c64: { body: heaviest.name, direct: dRun, gateway: gRun, ratio: round(gRun.rps / dRun.rps, 3) } };
    }

    if (ONLY.has('tokens')) {
      log(`\nlong streamed answer (${LONG_ANSWER_WORDS} tokens), c=8 (${WARMUP}s + ${SECONDS}s each, in ${SLICES} alternating slices) …`);
      const gwBody = { model: MODEL, input: LONG_INPUT, stream: true, store: false };
      const directBody = { model: MODEL, messages: [{ role: 'user', content: LONG_INPUT }], stream: true, stream_options: { include_usage: true } };
      const pool = new Pool(gw.url, { connections: 1 });
      try {
        const text = (await timed(pool, '/v1/responses', JSON.stringify(gwBody))).text;
        completedStream(text);
        const deltas = text.split('event: response.output_text.delta\n').length - 1;
        if (deltas < LONG_ANSWER_WORDS) throw new Error(`long answer: ${deltas} text deltas, expected at least ${LONG_ANSWER_WORDS}`);
      } finally {
        await pool.close();
      }
      const [dRun, gRun] = await loads(8, [`${direct}/v1/chat/completions`, directBody], [`${gw.url}/v1/responses`, gwBody]);
      const cpuPerTokenUs = round(gRun.gatewayCpuUsPerRequest / LONG_ANSWER_WORDS, 2);
      log(`   direct ${fmt(dRun.rps, 0)} req/s, gateway ${fmt(gRun.rps, 0)} req/s (${fmt((100 * gRun.rps) / dRun.rps, 1)} %); gateway CPU ${fmt(gRun.gatewayCpuUsPerRequest, 0)} µs per answer, ${fmt(cpuPerTokenUs, 2)} µs per token`);
      results.tokens = { words: LONG_ANSWER_WORDS, connections: 8, direct: dRun, gateway: gRun, ratio: round(gRun.rps / dRun.rps, 3), gatewayCpuUsPerToken: cpuPerTokenUs };
    }

    if (ONLY.has('growth')) results.growth = await conversationGrowth(tmpRoot, direct);
  } finally {
    await stopAll();
  }
}

// ---------- 3: in process ----------

const script = (text, rounds) => `${text}\n#sim ${JSON.stringify({ rounds })}`;

async function inProcessSections(tmpRoot, results) {
  const dataDir = join(tmpRoot, 'inproc');
  const sim = await startSimulator({ port: 0 });
  const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', upstream: { url: sim.url } } });
  const gateway = await startGateway({ config, logger: pino({ level: 'silent' }), executions: { web_search: () => webSearchExecution() } });
  // the floor of the client round trip: the same upstream requests through the bare pass-through
  // proxy (bench/lib/bare-proxy.mjs), in this process too — one HTTP hop and nothing else
  const proxy = await startBareProxy(new URL(sim.url).origin);
  const gwPool = new Pool(gateway.url, { connections: 1 });
  const simPool = new Pool(new URL(sim.url).origin, { connections: 1 });
  const proxyPool = new Pool(proxy.url, { connections: 1 });
  /** Sends a gateway request once and returns its parsed body and the upstream requests it made. */
  const capture = async (body) => {
    const before = sim.requests.length;
    const text = (await timed(gwPool, '/v1/responses', body)).text;
    return { response: JSON.parse(text), upstream: sim.requests.slice(before).map((r) => JSON.stringify(r.body)) };
  };
  const gwReq = (body) => () => timed(gwPool, '/v1/responses', body);
  const simReq = (body) => () => timed(simPool, '/v1/chat/completions', body);
  const proxyReq = (body) => () => timed(proxyPool, '/v1/chat/completions', body);
  try {
    if (ONLY.has('tools')) {
      log(`\ntool rounds (blocking, c=1, ${N} each after ${TOOL_WARM} warm-up rounds and at least ${2 * JIT_WARMUP} s, medians) …`);
      // a gateway tool loop: 5 web_search rounds then the answer (6 upstream rounds) vs the answer alone
      const ROUNDS = 5;
      const loopSteps = Array.from({ length: ROUNDS }, (_, i) => ({ tool_calls: [{ name: 'web_search', arguments: { query: `switchyard ${i}` } }] }));
      const body = (input) => JSON.stringify({ model: MODEL, input, tools: [{ type: 'web_search' }], stream: false, store: false });
      const loopBody = body(script('search please', [...loopSteps, { text: 'Found it.' }]));
      const plainBody = body(script('search please', [{ text: 'Found it.' }]));
      const loop = await capture(loopBody);
      if (loop.response.status !== 'completed' || loop.upstream.length !== ROUNDS + 1) throw new Error(`tool loop: status ${loop.response.status}, ${loop.upstream.length} upstream rounds`);
      const plain = await capture(plainBody);
      const makers = { loop: gwReq(loopBody), plain: gwReq(plainBody), directPlain: simReq(plain.upstream[0]) };
      loop.upstream.forEach((b, i) => {
        makers[`directLoop${i}`] = simReq(b);
      });
      const m = await interleaved(makers, TOOL_WARM, N, 2 * JIT_WARMUP);
      let directLoop = 0;
      for (let i = 0; i <= ROUNDS; i++) directLoop += m[`directLoop${i}`];
      // what the 5 added rounds cost the gateway beyond what the added upstream work costs directly
      const loopPerRound = (m.loop - m.plain - (directLoop - m.directPlain)) / ROUNDS;
      log(`   5-round loop ${fmt(m.loop)} ms, plain ${fmt(m.plain)} ms; upstream directly: loop rounds Σ ${fmt(directLoop)} ms, plain ${fmt(m.directPlain)} ms → ${fmt(loopPerRound)} ms per added round`);

      // a client function round trip: turn 1 answers with a function_call, turn 2 carries its output back
      const fnTool = { type: 'function', name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
      const userMsg = { role: 'user', content: script('weather in Paris?', [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { text: 'Sunny.' }]) };
      const turn1Body = JSON.stringify({ model: MODEL, input: [userMsg], tools: [fnTool], stream: false, store: false });
      const t1 = await capture(turn1Body);
      const call = t1.response.output.find((i) => i.type === 'function_call');
      if (!call) throw new Error('client round trip: no function_call in turn 1');
      const turn2Body = JSON.stringify({ model: MODEL, input: [userMsg, call, { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"sunny"}' }], tools: [fnTool], stream: false, store: false });
      const t2 = await capture(turn2Body);
      if (t2.response.output[0]?.content?.[0]?.text !== 'Sunny.') throw new Error('client round trip: unexpected turn 2');
      const c = await interleaved(
        { turn1: gwReq(turn1Body), direct1: simReq(t1.upstream[0]), proxy1: proxyReq(t1.upstream[0]), turn2: gwReq(turn2Body), direct2: simReq(t2.upstream[0]), proxy2: proxyReq(t2.upstream[0]) },
        TOOL_WARM,
        N,
        2 * JIT_WARMUP,
      );
      const clientPerRound = (c.turn1 - c.direct1 + (c.turn2 - c.direct2)) / 2;
      const proxyPerRound = (c.proxy1 - c.direct1 + (c.proxy2 - c.direct2)) / 2;
      log(`   client function round trip: turn 1 ${fmt(c.turn1)} ms (direct ${fmt(c.direct1)}), turn 2 ${fmt(c.turn2)} ms (direct ${fmt(c.direct2)}) → ${fmt(clientPerRound)} ms per round; bare proxy ${fmt(proxyPerRound)} ms per round`);
      results.tools = {
        gatewayLoop: { rounds: ROUNDS, medianMs: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v, 4)])), perAddedRoundMs: round(loopPerRound, 4) },
        clientRoundTrip: { medianMs: Object.fromEntries(Object.entries(c).map(([k, v]) => [k, round(v, 4)])), perRoundMs: round(clientPerRound, 4), bareProxyPerRoundMs: round(proxyPerRound, 4) },
      };
    }

  } finally {
    await gwPool.close();
    await simPool.close();
    await proxyPool.close();
    await proxy.close();
    await gateway.close();
    await sim.close();
  }
}

/** A few KB of ordinary prose (varied words, so nothing compresses to a trick). */
function proseKB(kb, seed) {
  const words = ['gateway', 'stream', 'response', 'model', 'token', 'upstream', 'history', 'turn', 'request', 'latency', 'cache', 'store', 'event', 'function', 'tool', 'round'];
  let s = '';
  let x = seed + 1;
  while (s.length < kb * 1024) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += `${words[x % words.length]} `;
  }
  return s.trim();
}

/**
 * Chains of depth 1, 10, 100, 1,000 stored in the gateway's SQLite file (cloned from one real
 * stored turn of ≈ 5 KB, with fresh response and item ids, linked by previous_response_id), each
 * continued as a conversation goes on: every measured turn continues from the one before it (so
 * no turn finds its chain as another turn left it), vs the gateway's upstream request sent
 * directly. Gateway and upstream each in a process of their own; the upstream answers every
 * request with one recorded simulator answer after reading its body (bench/lib/replay-upstream.mjs).
 */
async function conversationGrowth(tmpRoot, simOrigin) {
  const DEPTHS = [1, 10, 100, 1000];
  log(`\nconversation growth: turns continuing a chain of depth ${DEPTHS.join(', ')} (≈ 5 KB per stored turn) …`);
  // the upstream answers as the simulator answers the same question: the template turn's long
  // question gets its long answer (the simulator echoes it), and every measured turn's
  // 'And then?' the simulator's short one
  const templateInput = proseKB(2.5, 1);
  const upstream = await startReplayUpstreamChild();
  const dataDir = join(tmpRoot, 'growth-data');
  const gw = await startGatewayChild({ port: await freePort(), upstream: upstream.url, dataDir });
  const gwPool = new Pool(gw.url, { connections: 1 });
  const upstreamPool = new Pool(upstream.origin, { connections: 1 });
  const turn = async (previous) => {
    const { ms, text } = await timed(gwPool, '/v1/responses', JSON.stringify({ model: MODEL, previous_response_id: previous, input: 'And then?', stream: false, store: true }));
    const response = JSON.parse(text);
    if (response.status !== 'completed') throw new Error(`growth: a turn ended ${response.status}`);
    return { ms, id: response.id };
  };
  try {
    await upstream.answerAs(`${simOrigin}/v1`, templateInput);
    const template = JSON.parse((await timed(gwPool, '/v1/responses', JSON.stringify({ model: MODEL, input: templateInput, stream: false, store: true }))).text);
    await upstream.answerAs(`${simOrigin}/v1`, 'And then?');
    const tips = cloneChains(join(dataDir, 'switchyard.db'), template.id, DEPTHS);
    // a fresh gateway: warmed up with turns of the kind measured (its first 300 turns of a conversation), discarded
    let warm = template.id;
    for (let i = 0; i < 300; i++) warm = (await turn(warm)).id;
    const out = { perDepth: {} };
    for (const depth of DEPTHS) {
      let tip = (await turn(tips[depth])).id;
      const upstreamBody = Buffer.from(await upstream.lastBody());
      const messages = JSON.parse(upstreamBody.toString()).messages.length;
      if (messages !== 2 * depth + 1) throw new Error(`growth: depth ${depth} sent ${messages} messages upstream`);
      const n = N;
      const gateway = [];
      const direct = [];
      for (let i = 0; i < 20 + n; i++) {
        const t = await turn(tip);
        tip = t.id;
        // the direct request is the one the chain's first measured turn sent: as many bytes within
        // 1 % (each turn adds a short question and answer), answered the same
        const d = await timed(upstreamPool, '/v1/chat/completions', upstreamBody);
        if (i >= 20) {
          gateway.push(t.ms);
          direct.push(d.ms);
        }
      }
      const m = { gateway: median(gateway), direct: median(direct) };
      out.perDepth[depth] = { upstreamMessages: messages, upstreamBytes: upstreamBody.length, n, gatewayMedianMs: round(m.gateway, 4), directMedianMs: round(m.direct, 4), addedMedianMs: round(m.gateway - m.direct, 4) };
      log(`   depth ${String(depth).padStart(4)}: ${String(messages).padStart(4)} upstream messages, ${String(upstreamBody.length).padStart(8)} B; gateway ${fmt(m.gateway)} ms, direct ${fmt(m.direct)} ms, added ${fmt(m.gateway - m.direct)} ms (n=${n})`);
    }
    out.addedRatio1000vs1 = round(out.perDepth[1000].addedMedianMs / out.perDepth[1].addedMedianMs, 2);
    return out;
  } finally {
    await gwPool.close();
    await upstreamPool.close();
  }
}

// ---------- targets ----------

function evaluate(results) {
  const t = [];
  // `floor`: the same figure for the bare pass-through proxy in this run, where one applies
  const add = (name, value, unit, op, limit, floor = null) => {
    const pass = value !== null && Number.isFinite(value) && (op === '<' ? value < limit : op === '<=' ? value <= limit : value >= limit);
    t.push({ name, value, unit, target: `${op} ${limit} ${unit}`, result: pass ? 'PASS' : 'MISS', floor });
  };
  if (results.store) add('throughput ratio, store: true (SQLite WAL), blocking, c=64', round(results.store.storeTrueRatio * 100, 1), '%', '>=', 40);
  if (results.codex) {
    add('Codex bodies: added median latency (mean of 4), streaming, c=1', results.codex.meanAddedMedianMs, 'ms', '<', 0.3, results.codex.bareProxyMeanAddedMedianMs ?? null);
    add(`Codex body ${results.codex.c64.body}: throughput ratio, c=64`, round(results.codex.c64.ratio * 100, 1), '%', '>=', 50);
  }
  if (results.tools) {
    add('gateway tool loop (5 rounds): gateway time per round beyond upstream', results.tools.gatewayLoop.perAddedRoundMs, 'ms', '<=', 0.2);
    add('client function round trip: gateway time per round beyond upstream', results.tools.clientRoundTrip.perRoundMs, 'ms', '<=', 0.2, results.tools.clientRoundTrip.bareProxyPerRoundMs ?? null);
  }
  if (results.growth) add('conversation growth: added latency depth 1,000 / depth 1', results.growth.addedRatio1000vs1, '×', '<=', 2);
  return t;
}

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  log(line(header));
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) log(line(r));
}

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-hotpath-'));
  const cleanupTmp = async () => rmSync(tmpRoot, { recursive: true, force: true });
  installCleanupHooks(cleanupTmp);
  setTimeout(() => {
    console.error('hot-path benchmark exceeded 4 minutes: stopping');
    stopAll().finally(() => cleanupTmp().finally(() => process.exit(1)));
  }, 4 * 60_000).unref();
  log(`Switchyard hot-path benchmark — node ${process.version}, ${cpus().length} CPUs`);
  const results = { meta: { date: new Date().toISOString(), node: process.version, cpus: cpus().length, command: 'node bench/hotpath.mjs', secondsPerLoadRun: SECONDS, samples: N } };
  try {
    if (ONLY.has('store') || ONLY.has('codex') || ONLY.has('growth') || ONLY.has('tokens')) await childSections(tmpRoot, results);
    if (ONLY.has('tools')) await inProcessSections(tmpRoot, results);
  } finally {
    await stopAll();
    await cleanupTmp();
  }
  results.targets = evaluate(results);
  log('\nTargets (hot path)');
  table(['target', 'value', 'goal', 'result', 'bare proxy'], results.targets.map((x) => [x.name, `${x.value === null ? 'n/a' : x.value} ${x.unit}`, x.target, x.result, x.floor === null ? '' : `${x.floor} ${x.unit}`]));
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nwrote ${RESULTS_FILE}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`hot-path benchmark failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
