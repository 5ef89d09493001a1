// The gateway's own work per request, without sockets: requests go straight into the dispatch
// function node:http calls (src/http/dispatch.ts) with minimal request / response objects, and
// the upstream's answer is a recorded simulator stream handed over from memory. What is left is
// everything the gateway does itself — route, parse, prepare, encode the chat body, decode the
// SSE stream, translate, the Response — measured as process CPU per request, without the kernel,
// the HTTP parsers and the cache misses of three processes sharing two cores (which multiply
// this figure by ≈ 2–3 in bench/run.mjs).
//
//   node bench/pipeline.mjs [folder …]     (after `npm run build`; default: this checkout)
//
// Several folders (builds: `dist/` and `node_modules/`, see bench/ab.mjs) run in one process in
// alternating rounds, and B/A ratios are printed. Knobs: BENCH_PIPELINE_N (10,000 requests per
// round), BENCH_PIPELINE_ROUNDS (10), BENCH_PIPELINE_CONCURRENCY (8), BENCH_PIPELINE_STREAM (1 = streaming),
// BENCH_PIPELINE_STORE (1 = `store: true`: the SQLite writes of each turn, in the data folder of each build),
// BENCH_PIPELINE_BODY (a JSON file sent as the request body instead, e.g. a Codex request from
// test/fixtures/codex/; its own `stream` and `store` are kept), BENCH_PIPELINE_PATH (`/v1/responses`;
// `/v1/messages` for a Messages body, e.g. test/fixtures/claude-code/), BENCH_PIPELINE_COUNT (1 = no timing: the promises
// created and the bytes allocated per request, garbage included, of each build; BENCH_PIPELINE_TOP = 30 lists the
// allocating sites too — bench/lib/per-request.mjs).
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { startSimulator } from '../dist/simulate/server.js';
import { bytesPerRequest, promisesPerRequest } from './lib/per-request.mjs';
import { median } from './lib/stats.mjs';

const folders = (process.argv.length > 2 ? process.argv.slice(2) : [new URL('..', import.meta.url).pathname]).map((f) => resolve(f));
const N = Number(process.env.BENCH_PIPELINE_N ?? 10_000);
const ROUNDS = Number(process.env.BENCH_PIPELINE_ROUNDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_PIPELINE_CONCURRENCY ?? 8);
const STREAM = process.env.BENCH_PIPELINE_STREAM === '1';
const STORE = process.env.BENCH_PIPELINE_STORE === '1';
const BODY_FILE = process.env.BENCH_PIPELINE_BODY;
const COUNT = process.env.BENCH_PIPELINE_COUNT === '1';
const PATH = process.env.BENCH_PIPELINE_PATH ?? '/v1/responses';
const body = BODY_FILE ? readFileSync(BODY_FILE) : Buffer.from(JSON.stringify({ model: 'switchyard-sim', input: 'hello', stream: STREAM, store: STORE }));

/** The request side dispatch reads: headers, then the body as one `data` chunk and `end`. */
class MemoryRequest extends EventEmitter {
  method = 'POST';
  url = PATH;
  headers = { 'content-type': 'application/json', 'content-length': String(body.length) };
  routeLabel = 'unmatched';
  model = '';
  tenant = '';
  apiKey = undefined;
  on(event, listener) {
    super.on(event, listener);
    if (event === 'data') queueMicrotask(() => (this.emit('data', body), this.emit('end')));
    return this;
  }
  resume() {}
}

/** The response side: head, writes and end kept in memory; `close` after the end, as node:http. */
class MemoryResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  shouldKeepAlive = true;
  chunks = [];
  headers = {};
  constructor(done) {
    super();
    this.done = done;
  }
  setHeader(name, value) {
    this.headers[name] = value;
  }
  getHeader(name) {
    return this.headers[name];
  }
  hasHeader(name) {
    return name in this.headers;
  }
  writeHead(status, headers) {
    this.statusCode = status;
    Object.assign(this.headers, headers);
    this.headersSent = true;
    return this;
  }
  flushHeaders() {
    this.headersSent = true;
  }
  write(chunk) {
    this.headersSent = true;
    this.chunks.push(chunk);
    return true;
  }
  end(chunk) {
    if (chunk) this.chunks.push(chunk);
    this.headersSent = this.writableEnded = this.writableFinished = true;
    this.emit('finish');
    this.emit('close');
    this.done(this);
  }
}

/** A recorded upstream answer, replayed: the exchange the transport's stream reader consumes. */
function replayedExchange(chunks) {
  let next = 0;
  return {
    finished: false,
    abortReason: null,
    unwatch() {},
    next() {
      if (next < chunks.length) return chunks[next++];
      this.finished = true;
      return null;
    },
    abort(reason) {
      this.abortReason ??= reason;
      this.finished = true;
    },
  };
}

const sim = await startSimulator({ port: 0 });
const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-pipeline-'));
const sides = [];
try {
  for (const [i, folder] of folders.entries()) {
    const dist = (path) => import(pathToFileURL(join(folder, 'dist', path)).href);
    const [{ startGateway }, { loadConfig }, { UpstreamTransport }] = await Promise.all([dist('app.js'), dist('config/config.js'), dist('upstream/http.js')]);
    const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir: join(tmpRoot, `data${i}`), logLevel: 'silent', upstream: { url: sim.url } } });
    const gateway = await startGateway({ config, logger: pino({ level: 'silent' }) });
    // the first request goes to the simulator and its answer is recorded; every later one replays it
    const post = UpstreamTransport.prototype.post;
    let recorded = null;
    UpstreamTransport.prototype.post = async function (path, requestBody, signal) {
      if (recorded) return replayedExchange(recorded);
      const exchange = await post.call(this, path, requestBody, signal);
      const chunks = [];
      const next = exchange.next.bind(exchange);
      exchange.next = () => {
        const keep = (chunk) => (chunk === null ? (recorded = chunks) : chunks.push(chunk), chunk);
        const chunk = next();
        return chunk instanceof Promise ? chunk.then(keep) : keep(chunk);
      };
      return exchange;
    };
    const one = () => new Promise((done) => gateway.dispatch(new MemoryRequest(), new MemoryResponse(done)));
    const first = await one();
    if (first.statusCode !== 200 || !recorded) throw new Error(`${folder}: the first request answered ${first.statusCode}: ${first.chunks.join('').slice(0, 300)}`);
    sides.push({ folder, gateway, one, cpu: [] });
  }
  for (const side of sides) await batch(side.one, 5_000);
  if (COUNT) {
    // promises and allocated bytes per request instead of CPU time (bench/lib/per-request.mjs)
    for (const [i, side] of sides.entries()) {
      const promises = await promisesPerRequest(side.one, 500);
      const { bytes, sites } = await bytesPerRequest((n) => batch(side.one, n), Math.min(N, 5_000), { top: Number(process.env.BENCH_PIPELINE_TOP ?? 0) });
      console.log(`${'ABCDEFGH'[i] ?? i} ${side.folder}: ${promises.toFixed(1)} promises, ${(bytes / 1024).toFixed(1)} KiB allocated per request`);
      for (const { site, bytes: siteBytes } of sites) console.log(`    ${siteBytes.toFixed(0).padStart(6)} B  ${site}`);
    }
  } else await measureRounds();
} finally {
  for (const side of sides) await side.gateway.close();
  await sim.close();
  rmSync(tmpRoot, { recursive: true, force: true });
}

/** `n` requests through `one`, CONCURRENCY at a time. */
async function batch(one, n) {
  for (let i = 0; i < n; i += CONCURRENCY) await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n - i) }, one));
}

/** CPU per request of each build, in rounds that alternate between them; B/A ratios per round. */
async function measureRounds() {
  console.log(`${ROUNDS} rounds of ${N} ${BODY_FILE ? `${BODY_FILE} (${body.length} bytes)` : `${STREAM ? 'streaming' : 'blocking'}${STORE ? ', store: true' : ''}`} requests, ${CONCURRENCY} at a time, node ${process.version}`);
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const before = process.cpuUsage();
      await batch(side.one, N);
      const used = process.cpuUsage(before);
      side.cpu.push((used.user + used.system) / N);
    }
  }
  for (const [i, side] of sides.entries()) {
    console.log(`${'ABCDEFGH'[i] ?? i} ${side.folder}: ${median(side.cpu).toFixed(1)} µs/request (rounds: ${side.cpu.map((v) => v.toFixed(0)).join(' ')})`);
  }
  for (let i = 1; i < sides.length; i++) {
    const ratios = sides[i].cpu.map((v, r) => v / sides[0].cpu[r]);
    console.log(`${'ABCDEFGH'[i]}/A per round: ${ratios.map((v) => v.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(3)}`);
  }
}
