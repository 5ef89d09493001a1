// `npm run bench`: bench/run.mjs (gateway vs direct: latency, throughput, TTFB, CPU, memory and
// event-loop stall with 1,000 open streams) then bench/hotpath.mjs (store: true, Codex bodies,
// tool rounds, conversation growth), BENCH_RUNS times (1), each as a child process, and one
// table of every issue-16 target: the value of each run, the median and the spread (max − min),
// PASS/MISS on the median.
//
// With BENCH_RUNS > 1 the per-run durations shrink unless set explicitly (BENCH_SECONDS 3,
// BENCH_WARMUP_SECONDS 1, BENCH_TTFB_N 300, BENCH_HOTPATH_SECONDS 2, BENCH_HOTPATH_N 100), so
// three runs take about as long as one default run.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { median, round } from './lib/stats.mjs';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 1));
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const log = (...args) => console.log(...args);

function runChild(script, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [here(script)], { stdio: 'inherit', env: { ...process.env, ...env } });
    const forward = (sig) => () => child.kill(sig);
    const onInt = forward('SIGINT');
    const onTerm = forward('SIGTERM');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    child.once('exit', (code, signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      if (code === 0) resolve();
      else reject(new Error(`${script} exited with ${code ?? signal}`));
    });
  });
}

function medianOrNull(values) {
  const numeric = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
  return numeric.length ? round(median(numeric), 3) : null;
}

async function main() {
  const shorter = RUNS > 1
    ? { BENCH_SECONDS: '3', BENCH_WARMUP_SECONDS: '1', BENCH_TTFB_N: '300', BENCH_HOTPATH_SECONDS: '2', BENCH_HOTPATH_N: '100' }
    : {};
  const defaults = Object.fromEntries(Object.entries(shorter).filter(([k]) => process.env[k] === undefined));
  const perRun = [];
  for (let i = 0; i < RUNS; i++) {
    const suffix = RUNS > 1 ? `-run${i + 1}` : '';
    const files = { main: here(`./results${suffix}.json`), hotpath: here(`./hotpath-results${suffix}.json`) };
    log(`\n===== run ${i + 1}/${RUNS} =====`);
    await runChild('./run.mjs', { ...defaults, BENCH_RESULTS: files.main });
    await runChild('./hotpath.mjs', { ...defaults, BENCH_HOTPATH_RESULTS: files.hotpath });
    const targets = [
      ...JSON.parse(readFileSync(files.main, 'utf8')).targets,
      ...JSON.parse(readFileSync(files.hotpath, 'utf8')).targets,
    ];
    perRun.push(targets);
  }

  // one row per target; values of every run, median, spread; the verdict on the median
  const rows = perRun[0].map((t, idx) => {
    const values = perRun.map((targets) => targets[idx]?.value ?? null);
    const numeric = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
    const med = numeric.length ? median(numeric) : null;
    const [op, limitText] = t.target.split(' ');
    const limit = Number(limitText);
    const pass = med !== null && (op === '<' ? med < limit : op === '<=' ? med <= limit : med >= limit);
    return {
      name: t.name,
      unit: t.unit,
      target: t.target,
      values,
      median: round(med, 3),
      spread: numeric.length > 1 ? round(Math.max(...numeric) - Math.min(...numeric), 3) : null,
      results: perRun.map((targets) => targets[idx]?.result ?? 'n/a'),
      // the bare pass-through proxy's figure in the same runs (bench/lib/bare-proxy.mjs), where one applies
      floor: medianOrNull(perRun.map((targets) => targets[idx]?.floor ?? null)),
      result: pass ? 'PASS' : 'MISS',
    };
  });
  log(`\n===== all targets (${RUNS} run${RUNS > 1 ? 's' : ''}; PASS/MISS on the median) =====`);
  const header = ['target', ...perRun.map((_, i) => `run ${i + 1}`), ...(RUNS > 1 ? ['median', 'spread'] : []), 'goal', 'result', 'bare proxy'];
  const body = rows.map((r) => [r.name, ...r.values.map((v) => (v === null ? 'n/a' : `${v} ${r.unit}`)), ...(RUNS > 1 ? [`${r.median} ${r.unit}`, r.spread === null ? 'n/a' : `${r.spread} ${r.unit}`] : []), r.target, r.result, r.floor === null ? '' : `${r.floor} ${r.unit}`]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => String(row[i] ?? '').length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c ?? '').padEnd(widths[i]) : String(c ?? '').padStart(widths[i]))).join('  ');
  log(line(header));
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of body) log(line(row));
  const summary = here('./summary-results.json');
  writeFileSync(summary, `${JSON.stringify({ date: new Date().toISOString(), runs: RUNS, targets: rows }, null, 2)}\n`);
  log(`\nwrote ${summary}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`benchmark failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
