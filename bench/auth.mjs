// What authentication, limits and metrics cost together: the same gateway workload on a gateway
// with none of them (no keys, metrics off) and on one with all of them (an API key checked on
// every request, its rpm token bucket and concurrent-turn slot, the gateway's turn and stream
// limits, Prometheus metrics), alternating runs to spread machine noise.
// Target: throughput with them on ≥ 95 % of off. See bench/README.md.
//
//   node bench/auth.mjs          (after `npm run build`)
//
// Knobs: BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (2), BENCH_PAIRS (3), BENCH_CONNECTIONS (32),
// BENCH_RESULTS (bench/auth-results.json), BENCH_ON_METRICS (true; false = keys and limits alone).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertMetricsCounted, compareOnOff, onOffResult, runBench } from './lib/on-off.mjs';
import { freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { round } from './lib/stats.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RESULTS_FILE = process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./auth-results.json', import.meta.url));
const BODY = { model: 'switchyard-sim', input: 'hello', stream: true, store: false };
const KEY = 'sk-bench-0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * The admission hot path alone, in process: authenticate (one sha256 + one map lookup + a
 * constant-time compare), the rpm bucket, a turn slot and a stream slot taken and given back —
 * what the gateway adds to every turn request with keys and limits on. µs per request.
 */
async function admissionMicros() {
  const { KeyRing } = await import('../dist/auth/key-ring.js');
  const { authenticate } = await import('../dist/http/authenticate.js');
  const { Limiter } = await import('../dist/http/limiter.js');
  const keys = Array.from({ length: 1000 }, (_, i) => ({ name: `k${i}`, key: `${KEY}-${i}`, rpm: 100_000_000, maxConcurrent: 10_000 }));
  const ring = new KeyRing(keys, undefined, console);
  const limiter = new Limiter({ maxConcurrentTurns: 10_000, maxOpenStreams: 10_000 });
  const req = { headers: { authorization: `Bearer ${KEY}-500` } };
  const once = () => {
    const key = authenticate(ring, req);
    limiter.request(key, undefined);
    limiter.turn(key)();
    limiter.stream()();
  };
  for (let i = 0; i < 20_000; i++) once();
  const samples = [];
  for (let round = 0; round < 5; round++) {
    const n = 100_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) once();
    samples.push(Number(process.hrtime.bigint() - started) / 1e3 / n);
  }
  return Math.min(...samples);
}

async function main() {
  const admission = await admissionMicros();
  console.log(`admission hot path (1000 keys): ${round(admission, 2)} µs/request`);
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-auth-'));
  installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
  try {
    // limits high enough never to refuse: what is measured is their bookkeeping, not 429s
    const configFile = join(tmpRoot, 'on.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        auth: { keys: [{ name: 'bench', key: KEY, rpm: 100_000_000, maxConcurrent: 10_000 }, { name: 'other', key: `${KEY}-other` }] },
        limits: { maxConcurrentTurns: 10_000, maxOpenStreams: 10_000 },
      }),
    );
    const sim = await startSimulatorChild();
    const off = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'off'), env: { SWITCHYARD_METRICS: 'false' } });
    const on = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'on'), configFile, env: { SWITCHYARD_METRICS: process.env.BENCH_ON_METRICS ?? 'true' } });
    // the key is really checked: without it the gateway refuses
    const refused = await fetch(`${on.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(BODY) });
    if (refused.status !== 401) throw new Error(`expected 401 without a key, got ${refused.status}`);
    await refused.arrayBuffer();
    const c = await compareOnOff({ off, on, onHeaders: { authorization: `Bearer ${KEY}` }, body: BODY, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, pairs: PAIRS });
    if (process.env.BENCH_ON_METRICS !== 'false') await assertMetricsCounted(on.url);
    const result = onOffResult(c, {
      workload: 'POST /v1/responses stream:true store:false',
      compared: `off: no keys, metrics off; on: API key (sha256 + map lookup), rpm bucket, per-key and gateway turn slots, stream slot, metrics ${process.env.BENCH_ON_METRICS === 'false' ? 'off' : 'on'}`,
      connections: CONNECTIONS,
      seconds: SECONDS,
      pairs: PAIRS,
      extra: { admissionMicrosPerRequest: round(admission, 2), admissionShareOfGatewayCpu: round(admission / c.medianCpuOff, 4) },
    });
    writeFileSync(RESULTS_FILE, JSON.stringify(result, null, 2) + '\n');
    console.log(`admission hot path: ${round(admission, 2)} µs = ${round((admission / c.medianCpuOff) * 100, 2)} % of the gateway's CPU per request (off)`);
    console.log(`auth+limits+metrics on / off: measured req/s ratio ${result.throughputRatio}; CPU-bound throughput ratio (off CPU / on CPU per request) ${result.cpuBoundThroughputRatio} (${result.pass ? 'PASS' : 'MISS'} target ≥ 0.95)`);
  } finally {
    await stopAll();
  }
}

runBench(main);
