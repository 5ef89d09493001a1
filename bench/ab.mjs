// A/B of two gateway builds: gateway CPU per request against one simulator, in alternating rounds
// (this VM's speed drifts by tens of percent within minutes, so only rounds run side by side
// compare). For checking that a change to the hot path does what it claims.
//
//   node bench/ab.mjs <folder A> <folder B>
//
// Each folder holds a build (`dist/` and `node_modules/`), e.g. a worktree of the base commit:
// `git worktree add /tmp/base <rev> && cd /tmp/base && ln -s <this checkout>/node_modules && npm run build`.
// Workload: `POST /v1/responses {input:"hello", store:false}`. Knobs: BENCH_AB_ROUNDS (8),
// BENCH_AB_SECONDS (3), BENCH_AB_CONNECTIONS (32), BENCH_AB_STREAM (1 = streaming),
// BENCH_AB_LOG_LEVEL (warn; `info` = with the access log), BENCH_AB_STORE (1 = `store: true`),
// BENCH_AB_BODY (a JSON file sent as the request body instead, e.g. a Codex request from
// test/fixtures/codex/; its own `stream` and `store` are kept).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measure } from './lib/load.mjs';
import { cpuMicros, freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { median } from './lib/stats.mjs';

const folders = process.argv.slice(2).map((folder) => resolve(folder));
if (folders.length !== 2) {
  console.error('usage: node bench/ab.mjs <folder A> <folder B>');
  process.exit(2);
}
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 8);
const SECONDS = Number(process.env.BENCH_AB_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_AB_CONNECTIONS ?? 32);
const STREAM = process.env.BENCH_AB_STREAM === '1';
const LOG_LEVEL = process.env.BENCH_AB_LOG_LEVEL ?? 'warn';
const STORE = process.env.BENCH_AB_STORE === '1';
const BODY_FILE = process.env.BENCH_AB_BODY;

const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-ab-'));
installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
try {
  const sim = await startSimulatorChild();
  const body = BODY_FILE ? readFileSync(BODY_FILE, 'utf8') : { model: 'switchyard-sim', input: 'hello', stream: STREAM, store: STORE };
  const sides = [];
  for (const [i, root] of folders.entries()) {
    const gw = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, `data${i}`), root, env: { SWITCHYARD_LOG_LEVEL: LOG_LEVEL } });
    sides.push({ root, gw, url: `${gw.url}/v1/responses`, cpu: [], rps: [] });
  }
  for (const side of sides) await measure({ url: side.url, body, connections: CONNECTIONS, seconds: 2, warmupSeconds: 0 });
  console.log(`${ROUNDS} rounds of ${SECONDS} s, c=${CONNECTIONS}, ${BODY_FILE ?? `${STREAM ? 'streaming' : 'blocking'}${STORE ? ', store: true' : ''}`}, alternating order`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const r = await measure({ url: side.url, body, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: 0, before: () => cpuMicros(side.gw.pid), after: () => cpuMicros(side.gw.pid) });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${side.root}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      side.cpu.push((r.after - r.before) / r.requests);
      side.rps.push(r.rps);
      // the simulator logs every request: empty it between rounds
      await sim.lastRequests(0);
    }
  }
  for (const [i, side] of sides.entries()) {
    console.log(`${'AB'[i]} ${side.root}: CPU ${median(side.cpu).toFixed(0)} µs/request (rounds: ${side.cpu.map((v) => v.toFixed(0)).join(' ')}), ${median(side.rps).toFixed(0)} req/s`);
  }
  const ratios = sides[1].cpu.map((v, i) => v / sides[0].cpu[i]);
  console.log(`B/A CPU per request, per round: ${ratios.map((v) => v.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(3)}`);
} finally {
  await stopAll();
  rmSync(tmpRoot, { recursive: true, force: true });
}
