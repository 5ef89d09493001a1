// Where the gateway's CPU per request goes, next to the bare proxy's: both children run under the
// same load (c=64, "hello") while Linux `perf` samples them (software clock: no hardware counters
// needed, kernel included; node's --perf-basic-prof-only-functions names the JIT code), and every
// sampled symbol is put in a category — the gateway's own JavaScript, node's and undici's, V8's
// builtins (inline-cache misses, promises and async functions), JSON, the GC, the compiler, the
// kernel. Prints µs per request per category for both and the difference: what the gateway adds
// on top of any Node.js process in its place, by kind of work.
//
//   node bench/cpu-split.mjs        (after `npm run build`; needs `perf` — apt-get install linux-perf)
//
// Knobs: BENCH_SPLIT_SECONDS (6, measured seconds per side), BENCH_SPLIT_STREAM (1 = streaming),
// BENCH_SPLIT_CONNECTIONS (64; 1 = one request at a time, where every request pays the event loop's
// wake-ups and finds its caches cold), BENCH_SPLIT_TOP (0; N = also list each side's N costliest
// symbols in µs per request).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measure } from './lib/load.mjs';
import { freePort, installCleanupHooks, startBareProxyChild, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';

const SECONDS = Number(process.env.BENCH_SPLIT_SECONDS ?? 6);
const STREAM = process.env.BENCH_SPLIT_STREAM === '1';
const CONNECTIONS = Number(process.env.BENCH_SPLIT_CONNECTIONS ?? 64);
const TOP = Number(process.env.BENCH_SPLIT_TOP ?? 0);
const FREQUENCY = 4000;
const PERF_FLAG = '--perf-basic-prof-only-functions';

try {
  execFileSync('perf', ['--version'], { stdio: 'ignore' });
} catch {
  console.log('perf is not installed (apt-get install linux-perf): nothing measured');
  process.exit(0);
}

/** The category of one `perf report` symbol line (first match wins). */
const CATEGORIES = [
  ['kernel', (s) => s.includes('[k]')],
  ['JS: gateway (dist/)', (s) => /JS:.*\/dist\//.test(s)],
  ['JS: undici', (s) => /JS:.*undici/.test(s)],
  ['JS: llhttp (wasm)', (s) => /JS:.*wasm/.test(s)],
  ['JS: node core', (s) => /JS:.*node:/.test(s)],
  ['JS: other', (s) => s.includes('JS:')],
  ['GC', (s) => /Scaveng|Heap|Mark|Sweep|GC|Evacuat|Concurrent|Minor/.test(s)],
  ['JSON', (s) => s.includes('Json')],
  ['compiler', (s) => /compiler::|Compil|Turbofan|Maglev/.test(s)],
  ['builtins: promises, async', (s) => /Builtins_.*(Promise|Microtask|Generator|Await|Async)/.test(s)],
  ['builtins: inline caches', (s) => /Builtins_.*IC/.test(s)],
  ['builtins: other', (s) => s.includes('Builtins_')],
  ['V8 runtime', (s) => /Runtime_|v8::/.test(s)],
  ['node C++, libuv', (s) => /node::|uv_|llhttp/.test(s)],
  ['libc (malloc, memcpy)', (s) => /libc|malloc|free|memmove|memcpy|memset|_int_/.test(s)],
  ['other', () => true],
];

/** µs per request by category, from a perf data file and the requests of its window. */
function split(dataFile, requests) {
  const report = execFileSync('perf', ['report', '-i', dataFile, '--no-children', '--sort', 'dso,sym', '--stdio', '-g', 'none'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  // cpu-clock counts nanoseconds of CPU
  const totalUs = Number(/# Event count \(approx\.\): (\d+)/.exec(report)?.[1] ?? 0) / 1000;
  const byCategory = new Map(CATEGORIES.map(([name]) => [name, 0]));
  const symbols = [];
  for (const line of report.split('\n')) {
    const match = /^\s+([\d.]+)%/.exec(line);
    if (!match) continue;
    const [name] = CATEGORIES.find(([, test]) => test(line));
    const us = (Number(match[1]) / 100) * (totalUs / requests);
    byCategory.set(name, byCategory.get(name) + us);
    if (symbols.length < TOP) symbols.push([us, line.slice(match[0].length).trim().replace(/\s+/g, ' ')]);
  }
  return { total: totalUs / requests, byCategory, symbols };
}

installCleanupHooks();
const tmp = mkdtempSync(join(tmpdir(), 'switchyard-bench-split-'));
try {
  const sim = await startSimulatorChild();
  const gateway = await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmp, 'data'), nodeArgs: [PERF_FLAG] });
  const proxy = await startBareProxyChild(`http://127.0.0.1:${sim.port}`, { NODE_OPTIONS: PERF_FLAG });
  const gatewayBody = { model: 'switchyard-sim', input: 'hello', stream: STREAM, store: false };
  const directBody = { model: 'switchyard-sim', messages: [{ role: 'user', content: 'hello' }], stream: STREAM, ...(STREAM ? { stream_options: { include_usage: true } } : {}) };
  const sides = [
    { name: 'gateway', url: `${gateway.url}/v1/responses`, body: gatewayBody, pid: gateway.pid },
    { name: 'bare proxy', url: `${proxy.url}/v1/chat/completions`, body: directBody, pid: proxy.pid },
  ];
  // JIT warm-up of both, as bench/run.mjs does
  for (const side of sides) await measure({ url: side.url, body: side.body, connections: 32, seconds: 6, warmupSeconds: 0 });
  for (const side of sides) {
    const dataFile = join(tmp, `${side.pid}.data`);
    const perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', String(FREQUENCY), '-p', String(side.pid), '-o', dataFile], { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const run = await measure({ url: side.url, body: side.body, connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: 0 });
    perf.kill('SIGINT');
    await new Promise((resolve) => perf.once('exit', resolve));
    side.split = split(dataFile, run.requests);
    side.rps = run.rps;
  }
  const [gw, px] = sides;
  console.log(`CPU per request by kind of work, ${STREAM ? 'streaming' : 'blocking'} "hello", c=${CONNECTIONS}, ${SECONDS} s each (perf cpu-clock at ${FREQUENCY} Hz; node ${process.version})`);
  console.log(`${'category'.padEnd(28)} ${'gateway'.padStart(9)} ${'bare proxy'.padStart(11)} ${'added'.padStart(8)}`);
  const rows = CATEGORIES.map(([name]) => [name, gw.split.byCategory.get(name), px.split.byCategory.get(name)]).sort((a, b) => b[1] - b[2] - (a[1] - a[2]));
  for (const [name, g, p] of rows) console.log(`${name.padEnd(28)} ${g.toFixed(1).padStart(9)} ${p.toFixed(1).padStart(11)} ${(g - p).toFixed(1).padStart(8)}`);
  console.log(`${'total (µs per request)'.padEnd(28)} ${gw.split.total.toFixed(1).padStart(9)} ${px.split.total.toFixed(1).padStart(11)} ${(gw.split.total - px.split.total).toFixed(1).padStart(8)}`);
  for (const side of TOP > 0 ? sides : []) {
    console.log(`\n${side.name}: the ${TOP} costliest symbols, µs per request`);
    for (const [us, symbol] of side.split.symbols) console.log(`${us.toFixed(2).padStart(7)}  ${symbol.slice(0, 150)}`);
  }
  console.log(`requests/s while sampled: gateway ${gw.rps.toFixed(0)}, bare proxy ${px.rps.toFixed(0)}`);
} finally {
  await stopAll();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
