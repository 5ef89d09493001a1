// What metrics cost: the same gateway workload with `metrics.enabled` off and on (the request
// observer, label children, engine and store instrumentation), alternating runs to spread machine
// noise. Target: throughput with metrics on ≥ 95 % of off. See bench/README.md.
//
//   node bench/metrics.mjs          (after `npm run build`)
//
// Knobs: BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (2), BENCH_PAIRS (3), BENCH_CONNECTIONS (32),
// BENCH_RESULTS (bench/metrics-results.json).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertMetricsCounted, compareOnOff, onOffResult, runBench } from './lib/on-off.mjs';
import { freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RESULTS_FILE = process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./metrics-results.json', import.meta.url));
const BODY = { model: 'switchyard-sim', input: 'hello', stream: true, store: false };

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-metrics-'));
  installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
  try {
    const sim = await startSimulatorChild();
    const off = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'off'), env: { SWITCHYARD_METRICS: 'false' } });
    const on = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'on'), env: { SWITCHYARD_METRICS: 'true' } });
    const c = await compareOnOff({ off, on, body: BODY, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, pairs: PAIRS });
    // the metrics endpoint answers and counted the load
    await assertMetricsCounted(on.url);
    const result = onOffResult(c, { workload: 'POST /v1/responses stream:true store:false', connections: CONNECTIONS, seconds: SECONDS, pairs: PAIRS });
    writeFileSync(RESULTS_FILE, JSON.stringify(result, null, 2) + '\n');
    console.log(`metrics on / off: measured req/s ratio ${result.throughputRatio}; CPU-bound throughput ratio (off CPU / on CPU per request) ${result.cpuBoundThroughputRatio} (${result.pass ? 'PASS' : 'MISS'} target ≥ 0.95)`);
  } finally {
    await stopAll();
  }
}

runBench(main);
