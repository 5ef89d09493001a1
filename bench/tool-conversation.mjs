// A stored conversation whose every turn calls a namespaced client tool (as Codex's
// `multi_agent_v1` tools are declared): each turn continues from the last with
// `previous_response_id`, answering the last call and asking again, so the history grows by a
// call, its output and a message (≈ 3 KB) per turn. BENCH_TOOLCONV_SHAPE=loop: an agent's tool
// loop instead — one user message, then every turn only the last call's result (≈ 1.5 KB) and the
// model's next call. Prints, per build, the median time per turn
// and the gateway's CPU per turn early (turns 20–220) and late (turns 800–1,000, ≈ 3 MB of
// history): a held history that did not hold namespaced calls converted the whole history every
// turn. BENCH_TOOLCONV_SHAPE=resent: Codex's way over HTTP — `store: false`, no
// `previous_response_id`, the whole history (the items the gateway answered with, as they came)
// resent with every request. BENCH_TOOLCONV_SHAPE=claude: Claude Code's way over the Messages
// surface — its recorded request (test/fixtures/claude-code/: system prompt, 12 tools, the first
// two messages) continued by a `Bash` call and its result per turn, the whole conversation resent
// with every request and only the newest message marked with `cache_control` (`stream: false`).
// BENCH_TOOLCONV_SEARCH=1: the first turn makes a web search first (the gateway runs it, against a
// local server speaking SearXNG's JSON API), so every later turn's history holds a hosted call of
// a turn not stored (with `resent`: its record is kept in memory, the history held past it).
//
//   node bench/tool-conversation.mjs [folder …]    (after `npm run build`; default: this checkout)
//
// Several folders (builds: `dist/` and `node_modules/`, see bench/ab.mjs) each get a gateway
// child in front of one simulator; their conversations alternate, two rounds. The simulator parses
// every body too, so compare the gateway's CPU per turn (from /proc, 10 ms ticks over 200 turns)
// rather than the wall time. Knobs: BENCH_TOOLCONV_TURNS (1000), BENCH_TOOLCONV_WINDOW (200),
// BENCH_TOOLCONV_ROUNDS (2), BENCH_TOOLCONV_SHAPE (`answer`, `loop`, `resent` or `claude`). Prints only.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:http';
import { cpuMicros, freePort, installCleanupHooks, startGatewayChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { median } from './lib/stats.mjs';

const TURNS = Number(process.env.BENCH_TOOLCONV_TURNS ?? 1000);
const WINDOW = Number(process.env.BENCH_TOOLCONV_WINDOW ?? 200);
const ROUNDS = Number(process.env.BENCH_TOOLCONV_ROUNDS ?? 2);
const LOOP = process.env.BENCH_TOOLCONV_SHAPE === 'loop';
const RESENT = process.env.BENCH_TOOLCONV_SHAPE === 'resent';
const CLAUDE = process.env.BENCH_TOOLCONV_SHAPE === 'claude';
const SEARCH = process.env.BENCH_TOOLCONV_SEARCH === '1';
const roots = (process.argv.length > 2 ? process.argv.slice(2) : [new URL('..', import.meta.url).pathname]).map((folder) => resolve(folder));
const tools = [...(SEARCH ? [{ type: 'web_search' }] : []), { type: 'namespace', name: 'files', description: 'File tools.', tools: [{ type: 'function', name: 'list', description: 'Lists a folder.', parameters: { type: 'object', properties: { dir: { type: 'string' } } } }] }];
const filler = 'gateway stream response model token '.repeat(40);

/** One conversation of TURNS turns: median wall time and gateway CPU per turn in the two windows. */
async function conversation(gw, sim) {
  const times = [];
  const cpu = {};
  let previous;
  let callId;
  /** What a client that resends everything holds: its input so far and the output items it was answered with. */
  let history = [];
  for (let i = 0; i < TURNS; i++) {
    if (i === 20) cpu.earlyFrom = cpuMicros(gw.pid);
    if (i === 20 + WINDOW) cpu.early = (cpuMicros(gw.pid) - cpu.earlyFrom) / WINDOW;
    if (i === TURNS - WINDOW) cpu.lateFrom = cpuMicros(gw.pid);
    // the simulator's script: a call now (answer), or a call on every round after the one message (loop)
    const list = { tool_calls: [{ name: 'files__list', arguments: { dir: `d${i}` } }] };
    const rounds = SEARCH && i === 0 ? [{ tool_calls: [{ name: 'web_search', arguments: { query: 'gateway' } }] }, list] : [list];
    const ask = `${i} ${filler}\n#sim ${JSON.stringify({ rounds, repeat_last: LOOP })}`;
    const result = callId ? [{ type: 'function_call_output', call_id: callId, output: `listing ${i} ${filler}` }] : [];
    const turnInput = LOOP && i > 0 ? result : [...result, { role: 'user', content: ask }];
    const input = RESENT ? [...history, ...turnInput] : turnInput;
    const t0 = performance.now();
    const request = RESENT ? { model: 'switchyard-sim', input, tools, store: false } : { model: 'switchyard-sim', input, tools, previous_response_id: previous };
    const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
    const body = await res.json();
    if (RESENT) history = [...input, ...(body.output ?? [])];
    times.push(performance.now() - t0);
    const call = body.output?.find((item) => item.type === 'function_call');
    if (res.status !== 200 || call?.namespace !== 'files') throw new Error(`turn ${i}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    callId = call.call_id;
    previous = body.id;
    // the simulator logs every request: empty it now and then
    if (i % 50 === 0) await sim.lastRequests(0);
  }
  cpu.late = (cpuMicros(gw.pid) - cpu.lateFrom) / WINDOW;
  return { early: median(times.slice(20, 20 + WINDOW)), late: median(times.slice(TURNS - WINDOW)), cpuEarly: cpu.early / 1000, cpuLate: cpu.late / 1000 };
}

/** Claude Code's recorded request: everything but its conversation after the first two messages. */
const claudeRequest = JSON.parse(readFileSync(new URL('../test/fixtures/claude-code/bash-loop-turn-7.json', import.meta.url), 'utf8'));

/** As `conversation`, through `/v1/messages` as Claude Code sends it. */
async function claudeConversation(gw, sim) {
  const times = [];
  const cpu = {};
  const script = `#sim ${JSON.stringify({ rounds: [{ tool_calls: [{ name: 'Bash', arguments: { command: 'ls -la', description: 'List files' } }] }], repeat_last: true })}`;
  const [first, environment] = claudeRequest.messages;
  const opening = [{ ...first, content: [first.content[0], { type: 'text', text: script }] }, environment];
  /** The conversation after the opening, as Claude Code keeps it (no marks). */
  const history = [];
  for (let i = 0; i < TURNS; i++) {
    if (i === 20) cpu.earlyFrom = cpuMicros(gw.pid);
    if (i === 20 + WINDOW) cpu.early = (cpuMicros(gw.pid) - cpu.earlyFrom) / WINDOW;
    if (i === TURNS - WINDOW) cpu.lateFrom = cpuMicros(gw.pid);
    const messages = [...opening, ...history];
    // the newest message's last block carries the cache mark (a copy: the kept history has none)
    const newest = messages.at(-1);
    const blocks = typeof newest.content === 'string' ? [{ type: 'text', text: newest.content }] : newest.content;
    messages[messages.length - 1] = { ...newest, content: [...blocks.slice(0, -1), { ...blocks.at(-1), cache_control: { type: 'ephemeral' } }] };
    const request = { ...claudeRequest, messages, stream: false };
    const t0 = performance.now();
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(request) });
    const body = await res.json();
    times.push(performance.now() - t0);
    const call = body.content?.find((block) => block.type === 'tool_use');
    if (res.status !== 200 || call?.name !== 'Bash') throw new Error(`turn ${i}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    history.push({ role: 'assistant', content: body.content });
    history.push({ role: 'user', content: [{ tool_use_id: call.id, type: 'tool_result', content: `listing ${i} ${filler}`, is_error: false }] });
    if (i % 50 === 0) await sim.lastRequests(0);
  }
  cpu.late = (cpuMicros(gw.pid) - cpu.lateFrom) / WINDOW;
  return { early: median(times.slice(20, 20 + WINDOW)), late: median(times.slice(TURNS - WINDOW)), cpuEarly: cpu.early / 1000, cpuLate: cpu.late / 1000 };
}

/** A local search server (SearXNG's JSON API, ten results) and a config file for the gateways to use it. */
async function searchConfig(folder) {
  const results = Array.from({ length: 10 }, (_, n) => ({ url: `https://example.com/${n}`, title: `Result ${n}`, content: `What page ${n} says about gateways. ${filler}` }));
  const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ query: 'gateway', results })));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const file = join(folder, 'search.json');
  writeFileSync(file, JSON.stringify({ webSearch: { provider: 'searxng', baseUrl: `http://127.0.0.1:${server.address().port}`, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } }));
  return file;
}

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-toolconv-'));
  installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
  try {
    const sim = await startSimulatorChild();
    const configFile = SEARCH ? await searchConfig(tmpRoot) : undefined;
    const sides = [];
    for (const [i, root] of roots.entries()) sides.push({ root, gw: await startGatewayChild({ port: await freePort(), upstream: sim.url, dataDir: join(tmpRoot, `data${i}`), root, configFile }) });
    console.log(`${LOOP ? 'a tool loop' : RESENT ? 'answer and ask, the history resent whole (store: false)' : CLAUDE ? "Claude Code's agent loop over /v1/messages, resent whole" : 'answer and ask'}: ${TURNS} turns per conversation; windows: turns 20–${20 + WINDOW} and ${TURNS - WINDOW}–${TURNS}; ${ROUNDS} rounds, alternating`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const { root, gw } of round % 2 === 0 ? sides : [...sides].reverse()) {
        const r = await (CLAUDE ? claudeConversation : conversation)(gw, sim);
        console.log(`${root}: per turn ${r.early.toFixed(2)} ms early, ${r.late.toFixed(2)} ms late; gateway CPU per turn ${r.cpuEarly.toFixed(2)} ms early, ${r.cpuLate.toFixed(2)} ms late`);
      }
    }
  } finally {
    await stopAll();
    rmSync(tmpRoot, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`tool-conversation failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
