// What the access log costs: the same gateway workload at log level `warn` (no access-log lines)
// and at the default `info` (a line per request on stdout, here a file: a pipe would make this
// process — the load generator — read the log too), alternating runs to spread machine noise.
// Target: the access log costs < 5 % of throughput, judged on CPU per request. See bench/README.md.
//
//   node bench/access-log.mjs          (after `npm run build`)
//
// Knobs: BENCH_SECONDS (3), BENCH_WARMUP_SECONDS (2), BENCH_PAIRS (4), BENCH_CONNECTIONS (64),
// BENCH_STREAM (1 = streaming), BENCH_RESULTS (bench/access-log-results.json).
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compareOnOff, onOffResult, runBench } from './lib/on-off.mjs';
import { freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const STREAM = process.env.BENCH_STREAM === '1';
const RESULTS_FILE = process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./access-log-results.json', import.meta.url));
const BODY = { model: 'switchyard-sim', input: 'hello', stream: STREAM, store: false };

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-access-log-'));
  installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
  try {
    const sim = await startSimulatorChild();
    const off = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'off'), env: { SWITCHYARD_LOG_LEVEL: 'warn' } });
    const logFile = join(tmpRoot, 'access.log');
    const on = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'on'), env: { SWITCHYARD_LOG_LEVEL: 'info' }, stdout: openSync(logFile, 'w') });
    const lines = () => readFileSync(logFile, 'utf8').split('\n').length - 1;
    // the JIT's ramp, discarded (bench/README.md: Method)
    await compareOnOff({ off, on, body: BODY, connections: CONNECTIONS, seconds: 4, warmupSeconds: 0, pairs: 1 });
    const before = lines();
    const c = await compareOnOff({ off, on, body: BODY, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, pairs: PAIRS });
    // the batches still held are written within 25 ms
    await new Promise((resolve) => setTimeout(resolve, 100));
    const written = lines() - before;
    if (written < 1000) throw new Error(`the access log wrote only ${written} lines during the measured runs`);
    const result = onOffResult(c, { workload: `POST /v1/responses stream:${STREAM} store:false`, connections: CONNECTIONS, seconds: SECONDS, pairs: PAIRS, extra: { accessLogLines: written } });
    writeFileSync(RESULTS_FILE, JSON.stringify(result, null, 2) + '\n');
    console.log(`access log on / off: req/s ratio ${result.throughputRatio}; CPU-bound throughput ratio (off CPU / on CPU per request) ${result.cpuBoundThroughputRatio} (${result.pass ? 'PASS' : 'MISS'} target ≥ 0.95)`);
  } finally {
    await stopAll();
  }
}

runBench(main);
