// CPU profile of the gateway child under load (`node --cpu-prof`), kept as a text summary:
//
//   node bench/profile.mjs            (after `npm run build`)  → bench/profile-<label>.txt
//
// A simulator child and a gateway child started with NODE_OPTIONS=--cpu-prof; after a warm-up,
// BENCH_PROFILE_SECONDS (6) of each workload at concurrency 32: blocking store:false, streaming
// store:false, blocking store:true, and the Codex body fallback-tool/0002 (streaming); and, only
// when named in BENCH_PROFILE_ONLY, `growth`: a conversation continued turn after turn (blocking,
// store:true, each turn from the last) from a 1,000-deep chain (bench/lib/chains.mjs). The gateway
// is stopped with SIGTERM (V8 writes the profile on exit), and the samples after start-up and
// warm-up are summarised (top functions and files by self time).
// Knobs: BENCH_PROFILE_SECONDS (6), BENCH_PROFILE_CONNECTIONS (32), BENCH_PROFILE_LABEL (current), BENCH_PROFILE_TOP (45),
// BENCH_PROFILE_ONLY (blocking,streaming,store,codex: the workloads to run; growth), BENCH_PROFILE_KEEP
// (a path to copy the raw .cpuprofile to, e.g. for Chrome DevTools).
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure } from './lib/load.mjs';
import { freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { summarise } from './lib/profile-summary.mjs';
import { cloneChains } from './lib/chains.mjs';

const SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 6);
const LABEL = process.env.BENCH_PROFILE_LABEL ?? 'current';
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 45);
const CONNECTIONS = Number(process.env.BENCH_PROFILE_CONNECTIONS ?? 32);
const ONLY = new Set((process.env.BENCH_PROFILE_ONLY ?? 'blocking,streaming,store,codex').split(',').map((x) => x.trim()));
const MODEL = 'switchyard-sim';

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-profile-'));
  const cleanupTmp = async () => rmSync(tmpRoot, { recursive: true, force: true });
  installCleanupHooks(cleanupTmp);
  try {
    const sim = await startSimulatorChild();
    const profDir = join(tmpRoot, 'prof');
    const t0 = Date.now();
    const gw = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, 'data'), nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
    const url = `${gw.url}/v1/responses`;
    const codex = readFileSync(fileURLToPath(new URL('../test/fixtures/codex/fallback-tool/0002-request.json', import.meta.url)), 'utf8');
    const workloads = [
      ['blocking', 'blocking, store:false', { model: MODEL, input: 'hello', stream: false, store: false }],
      ['streaming', 'streaming, store:false', { model: MODEL, input: 'hello', stream: true, store: false }],
      ['store', 'blocking, store:true', { model: MODEL, input: 'hello', stream: false, store: true }],
      ['codex', 'Codex fallback-tool/0002, streaming', codex],
    ]
      .filter(([key]) => ONLY.has(key))
      .map(([, name, body]) => [name, body]);
    const growth = ONLY.has('growth') ? await growthConversation(url, join(tmpRoot, 'data')) : undefined;
    // warm-up (JIT), left out of the summary
    for (const [, body] of workloads) await measure({ url, body, connections: 32, seconds: 1, warmupSeconds: 0 });
    if (growth) await growth.run(1);
    const skipMs = Date.now() - t0;
    const lines = [];
    for (const [name, body] of workloads) {
      const r = await measure({ url, body, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: 0 });
      lines.push(`${name}: ${r.requests} requests, ${r.rps.toFixed(0)} req/s, p50 ${r.latencyMs.p50.toFixed(2)} ms`);
      console.log(lines[lines.length - 1]);
    }
    if (growth) {
      const turns = await growth.run(SECONDS);
      lines.push(`growth: ${turns} turns continuing a conversation from a 1,000-deep chain, one at a time`);
      console.log(lines[lines.length - 1]);
    }
    gw.child.kill('SIGTERM');
    await new Promise((resolve) => (gw.child.exitCode !== null ? resolve() : gw.child.once('exit', resolve)));
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('the gateway wrote no .cpuprofile');
    if (process.env.BENCH_PROFILE_KEEP) copyFileSync(join(profDir, file), process.env.BENCH_PROFILE_KEEP);
    const summary = summarise(JSON.parse(readFileSync(join(profDir, file), 'utf8')), TOP, skipMs);
    const out = fileURLToPath(new URL(`./profile-${LABEL}.txt`, import.meta.url));
    const header = [
      `# Gateway CPU profile (${LABEL}), ${new Date().toISOString()}, node ${process.version}`,
      `# node bench/profile.mjs (BENCH_PROFILE_ONLY=${[...ONLY].join(',')}): gateway child with --cpu-prof, concurrency ${CONNECTIONS}, ${SECONDS}s per workload; start-up and warm-up left out`,
      '# shared 2-core machine under load from other jobs: compare shares (%), not absolute ms',
      ...lines.map((l) => `#   ${l}`),
      '',
    ];
    writeFileSync(out, `${header.join('\n')}${summary}\n`);
    console.log(`\n${summary}\n\nwrote ${out}`);
  } finally {
    await stopAll();
    await cleanupTmp();
  }
}

/** A conversation at depth 1,000: `run(seconds)` continues it turn after turn, and says how many. */
async function growthConversation(url, dataDir) {
  const turn = async (previous, input = 'And then?') => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, input, previous_response_id: previous, stream: false, store: true }) });
    const body = await res.json();
    if (res.status !== 200 || body.status !== 'completed') throw new Error(`growth turn: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return body.id;
  };
  const template = await turn(undefined, 'gateway stream response model token '.repeat(70));
  let tip = cloneChains(join(dataDir, 'switchyard.db'), template, [1000])[1000];
  return {
    async run(seconds) {
      let turns = 0;
      for (const end = Date.now() + seconds * 1000; Date.now() < end; turns++) tip = await turn(tip);
      return turns;
    },
  };
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`profile failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
