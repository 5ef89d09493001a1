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
import { measure } from './lib/load.mjs';
import { cpuMicros, freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { median, round } from './lib/stats.mjs';

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
    const runs = { off: [], on: [] };
    const cpu = { off: [], on: [] };
    for (let pair = 0; pair < PAIRS; pair++) {
      // alternate which goes first, so a drift of the machine does not favour one side
      const order = pair % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const side of order) {
        const gw = side === 'off' ? off : on;
        const hook = () => cpuMicros(gw.pid);
        const r = await measure({ url: `${gw.url}/v1/responses`, body: BODY, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP, before: hook, after: hook });
        // gateway CPU per request: far less sensitive than req/s to other load on the machine
        const cpuPerRequest = (r.after - r.before) / r.requests;
        cpu[side].push(cpuPerRequest);
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${side}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        runs[side].push(r.rps);
        console.log(`pair ${pair + 1} ${side.padEnd(3)} ${round(r.rps, 0)} req/s  p50 ${round(r.latencyMs.p50, 2)} ms  gateway CPU ${round(cpuPerRequest, 1)} µs/request`);
      }
    }
    // the metrics endpoint answers and counted the load
    const text = await (await fetch(`${on.url}/metrics`)).text();
    if (!/switchyard_http_requests_total\{route="\/v1\/responses",method="POST",status="200"\} [1-9]/.test(text)) throw new Error('metrics did not count the load');
    const offRps = median(runs.off);
    const onRps = median(runs.on);
    const ratio = onRps / offRps;
    // throughput a CPU-bound gateway loses = 1 − off CPU / on CPU per request
    const cpuRatio = median(cpu.off) / median(cpu.on);
    const result = {
      date: new Date().toISOString(),
      workload: 'POST /v1/responses stream:true store:false',
      connections: CONNECTIONS,
      seconds: SECONDS,
      pairs: PAIRS,
      rps: runs,
      cpuMicrosPerRequest: cpu,
      medianRps: { off: round(offRps, 0), on: round(onRps, 0) },
      throughputRatio: round(ratio, 3),
      cpuBoundThroughputRatio: round(cpuRatio, 3),
      target: 'cpuBoundThroughputRatio ≥ 0.95',
      pass: cpuRatio >= 0.95,
    };
    writeFileSync(RESULTS_FILE, JSON.stringify(result, null, 2) + '\n');
    console.log(`metrics on / off: measured req/s ratio ${round(ratio, 3)}; CPU-bound throughput ratio (off CPU / on CPU per request) ${round(cpuRatio, 3)} (${result.pass ? 'PASS' : 'MISS'} target ≥ 0.95)`);
  } finally {
    await stopAll();
  }
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
