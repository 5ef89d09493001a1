// Two gateway children under the same streaming workload, `pairs` times, alternating which goes
// first so a drift of the machine favours neither: req/s and the gateway's CPU per request for
// each side, and both ratios (on / off). Used by bench/metrics.mjs, bench/auth.mjs and bench/access-log.mjs.
import { measure } from './load.mjs';
import { cpuMicros, stopAll } from './procs.mjs';
import { median, round } from './stats.mjs';

/**
 * @param {{ off: {url: string, pid: number}, on: {url: string, pid: number}, onHeaders?: Record<string, string>,
 *   body: object, connections: number, seconds: number, warmupSeconds: number, pairs: number }} options
 */
export async function compareOnOff({ off, on, onHeaders = {}, body, connections, seconds, warmupSeconds, pairs }) {
  const runs = { off: [], on: [] };
  const cpu = { off: [], on: [] };
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    for (const side of order) {
      const gw = side === 'off' ? off : on;
      const hook = () => cpuMicros(gw.pid);
      const headers = side === 'on' ? onHeaders : {};
      const r = await measure({ url: `${gw.url}/v1/responses`, body, headers, connections, seconds, warmupSeconds, before: hook, after: hook });
      // gateway CPU per request: far less sensitive than req/s to other load on the machine
      const cpuPerRequest = (r.after - r.before) / r.requests;
      cpu[side].push(cpuPerRequest);
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${side}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      runs[side].push(r.rps);
      console.log(`pair ${pair + 1} ${side.padEnd(3)} ${round(r.rps, 0)} req/s  p50 ${round(r.latencyMs.p50, 2)} ms  gateway CPU ${round(cpuPerRequest, 1)} µs/request`);
    }
  }
  const medianRps = { off: median(runs.off), on: median(runs.on) };
  return {
    rps: runs,
    cpuMicrosPerRequest: cpu,
    medianRps: { off: round(medianRps.off, 0), on: round(medianRps.on, 0) },
    throughputRatio: medianRps.on / medianRps.off,
    // throughput a CPU-bound gateway loses = 1 − off CPU / on CPU per request
    cpuBoundThroughputRatio: median(cpu.off) / median(cpu.on),
    medianCpuOff: median(cpu.off),
  };
}

/** The request counter of `/metrics` counted the load (else the "on" side measured nothing). */
export async function assertMetricsCounted(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  if (!/switchyard_http_requests_total\{route="\/v1\/responses",method="POST",status="200"\} [1-9]/.test(text)) throw new Error('metrics did not count the load');
}

/**
 * The record an on/off bench writes (metrics, auth, access log): what was compared, the comparison's
 * figures, `extra` fields, and the target — the "on" side costs < 5 % of a CPU-bound gateway's
 * throughput (off CPU / on CPU per request ≥ 0.95).
 */
export function onOffResult(c, { workload, compared, connections, seconds, pairs, extra = {} }) {
  return {
    date: new Date().toISOString(),
    workload,
    ...(compared ? { compared } : {}),
    connections,
    seconds,
    pairs,
    rps: c.rps,
    cpuMicrosPerRequest: c.cpuMicrosPerRequest,
    medianRps: c.medianRps,
    throughputRatio: round(c.throughputRatio, 3),
    cpuBoundThroughputRatio: round(c.cpuBoundThroughputRatio, 3),
    ...extra,
    target: 'cpuBoundThroughputRatio ≥ 0.95',
    pass: c.cpuBoundThroughputRatio >= 0.95,
  };
}

/** Runs a bench's `main`: on a failure, prints it, stops every child and exits non-zero. */
export function runBench(main) {
  main().catch(async (err) => {
    console.error(err);
    await stopAll();
    process.exit(1);
  });
}
