// code_interpreter benchmark: cold box start, warm call round trip (in the box, and a whole
// gateway turn), and the pool's hit rate for new containers. Runs against the compiled dist/.
//
//   npm run build && node bench/code-interpreter.mjs
//
// Knobs (environment): BENCH_CI_COLD_N (5 cold starts), BENCH_CI_WARM_N (30 warm calls),
// BENCH_CI_CONTAINERS (12 new containers for the hit rate), BENCH_CI_ARRIVAL_MS (1500: pause
// between new containers), BENCH_CI_POOL (2), BENCH_RESULTS (bench/code-interpreter-results.json).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startGateway } from '../dist/app.js';
import { loadConfig } from '../dist/config/config.js';
import { DEFAULT_CODE_INTERPRETER_CONFIG } from '../dist/containers/config.js';
import { DEFAULT_SANDBOX_LIMITS } from '../dist/sandbox/limits.js';
import { BoxPool } from '../dist/sandbox/pool.js';
import { preflight } from '../dist/sandbox/preflight.js';
import { prepareRuntime } from '../dist/sandbox/runtime.js';
import { median, percentile, round, sorted } from './lib/stats.mjs';

const COLD_N = Number(process.env.BENCH_CI_COLD_N ?? 5);
const WARM_N = Number(process.env.BENCH_CI_WARM_N ?? 30);
const CONTAINERS = Number(process.env.BENCH_CI_CONTAINERS ?? 12);
const ARRIVAL_MS = Number(process.env.BENCH_CI_ARRIVAL_MS ?? 1500);
const POOL = Number(process.env.BENCH_CI_POOL ?? 2);
const RESULTS_FILE = process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./code-interpreter-results.json', import.meta.url));
const PYTHON = '/usr/bin/python3';
const GIB = 1024 ** 3;

const check = preflight('bwrap', PYTHON);
if (!check.ok) {
  console.log(`code_interpreter benchmark skipped: ${check.problem}`);
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-ci-'));
chmodSync(dir, 0o711);
const watchdog = setTimeout(() => {
  console.error('watchdog: the benchmark took longer than 10 minutes');
  process.exit(2);
}, 10 * 60_000);
watchdog.unref();

const summary = (values) => {
  const s = sorted(values);
  return { n: s.length, median_ms: round(median(s), 1), p90_ms: round(percentile(s, 90), 1), min_ms: round(s[0], 1), max_ms: round(s[s.length - 1], 1) };
};
const now = () => performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function newPool(size, name) {
  return new BoxPool(
    { bwrap: 'bwrap', python: PYTHON, poolDir: join(dir, name, 'pool'), size, maxBoxes: 16, uidBase: 260_000, startTimeoutMs: 120_000, limits: DEFAULT_SANDBOX_LIMITS },
    () => prepareRuntime(join(dir, name, 'runtime')),
  );
}

const results = { date: new Date().toISOString(), node: process.version };
try {
  // 1. cold start: a box started on demand (prlimit + setpriv + bwrap + Python importing numpy, pandas, matplotlib), first cell answered
  {
    const pool = newPool(0, 'cold');
    const times = [];
    for (let i = 0; i < COLD_N; i++) {
      const t0 = now();
      const box = await pool.acquire(join(dir, 'cold', `c${i}`), GIB);
      await box.run('1', 30_000);
      times.push(now() - t0);
      await pool.release(box);
    }
    results.cold_start = summary(times);
    await pool.close();
  }

  // 2. warm call round trip in the box: one small cell in a running kernel
  {
    const pool = newPool(0, 'warm');
    const box = await pool.acquire(join(dir, 'warm', 'c'), GIB);
    await box.run('import pandas as pd\ndf = pd.DataFrame({"a": range(1000)})', 30_000);
    const times = [];
    for (let i = 0; i < WARM_N; i++) {
      const t0 = now();
      await box.run('df["a"].sum()', 30_000);
      times.push(now() - t0);
    }
    results.warm_call_in_box = summary(times);
    await pool.release(box);
    await pool.close();
  }

  // 3. a whole gateway turn with one python call in a warm container (two simulator rounds + the run + storing)
  {
    const config = loadConfig({
      env: {},
      overrides: {
        port: 0,
        host: '127.0.0.1',
        dataDir: join(dir, 'gateway'),
        logLevel: 'silent',
        codeInterpreter: { ...DEFAULT_CODE_INTERPRETER_CONFIG, python: PYTHON, dir: join(dir, 'gateway-containers'), poolSize: 1, uidBase: 262_000 },
      },
    });
    const gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
    const script = (code) => `go\n#sim ${JSON.stringify({ rounds: [{ tool_calls: [{ name: 'python', arguments: { code } }] }, { text: 'done' }] })}`;
    const turn = async (body) => {
      const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await res.json();
      if (res.status !== 200 || json.status !== 'completed') throw new Error(`turn failed: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
      return json;
    };
    const first = await turn({ model: 'sim', input: script('x = 0'), tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] });
    const containerId = first.output.find((i) => i.type === 'code_interpreter_call').container_id;
    const times = [];
    for (let i = 0; i < WARM_N; i++) {
      const t0 = now();
      await turn({ model: 'sim', input: script('x += 1\nx'), tools: [{ type: 'code_interpreter', container: containerId }], store: false });
      times.push(now() - t0);
    }
    results.warm_gateway_turn = summary(times);
    await gateway.close();
  }

  // 4. pool hit rate: new containers arriving every ARRIVAL_MS (steady), then all at once (burst), each running one cell
  const poolRun = async (name, count, arrivalMs) => {
    const pool = newPool(POOL, name);
    await pool.fill();
    const starts = [];
    for (let i = 0; i < count; i++) {
      const t0 = now();
      const box = await pool.acquire(join(dir, name, `c${i}`), GIB);
      await box.run('1', 30_000);
      starts.push(now() - t0);
      await pool.release(box);
      if (arrivalMs > 0) await sleep(arrivalMs);
    }
    const stats = pool.snapshot();
    await pool.close();
    return { size: POOL, arrival_ms: arrivalMs, containers: count, hits: stats.hits, misses: stats.misses, hit_rate: round(stats.hits / (stats.hits + stats.misses), 3), first_cell: summary(starts) };
  };
  results.pool = await poolRun('steady', CONTAINERS, ARRIVAL_MS);
  results.pool_burst = await poolRun('burst', Math.max(POOL * 3, 6), 0);

  console.log('code_interpreter benchmark');
  console.log(`  cold start (box + imports + first cell): median ${results.cold_start.median_ms} ms, p90 ${results.cold_start.p90_ms} ms (n=${results.cold_start.n})`);
  console.log(`  warm call in the box:                    median ${results.warm_call_in_box.median_ms} ms, p90 ${results.warm_call_in_box.p90_ms} ms (n=${results.warm_call_in_box.n})`);
  console.log(`  warm gateway turn (2 rounds + 1 run):    median ${results.warm_gateway_turn.median_ms} ms, p90 ${results.warm_gateway_turn.p90_ms} ms (n=${results.warm_gateway_turn.n})`);
  for (const [label, run] of [[`a container every ${ARRIVAL_MS} ms`, results.pool], ['back to back', results.pool_burst]]) {
    console.log(`  pool (size ${POOL}, ${label}): hit rate ${run.hit_rate} (${run.hits}/${run.hits + run.misses}), first cell median ${run.first_cell.median_ms} ms, p90 ${run.first_cell.p90_ms} ms`);
  }
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
