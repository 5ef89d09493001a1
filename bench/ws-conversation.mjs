// A store:false conversation over one Responses WebSocket (the mode the Codex CLI uses): each turn
// continues from the last through the connection's own cache, so the history grows by a turn of
// ≈ 2.5 KB each time. Prints the median time per turn early (turns 20–60) and late (turns 560–600,
// ≈ 3 MB of history sent upstream), and their ratio.
//
//   node bench/ws-conversation.mjs [folder]      (after `npm run build`; default: this checkout)
//
// A gateway child (`node dist/cli.js serve` in `folder`) in front of the replaying upstream
// (bench/lib/replay-upstream.mjs, answering every turn as the simulator answers "And then?"), so
// the figures are the gateway's and the bytes on the sockets. Prints only.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { WebSocket } from 'ws';
import { freePort, installCleanupHooks, startGatewayChild, startReplayUpstreamChild, startSimulatorChild, stopAll } from './lib/procs.mjs';
import { median } from './lib/stats.mjs';

const TURNS = 600;
const root = resolve(process.argv[2] ?? new URL('..', import.meta.url).pathname);

async function main() {
  const tmpRoot = mkdtempSync(join(tmpdir(), 'switchyard-bench-ws-'));
  installCleanupHooks(async () => rmSync(tmpRoot, { recursive: true, force: true }));
  try {
    const sim = await startSimulatorChild();
    const upstream = await startReplayUpstreamChild();
    await upstream.answerAs(sim.url, 'And then?');
    const gw = await startGatewayChild({ port: await freePort(), upstream: upstream.url, dataDir: join(tmpRoot, 'data'), root });
    const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((done, fail) => ws.once('open', done).once('error', fail));
    const waiting = [];
    ws.on('message', (data) => {
      const event = JSON.parse(data.toString());
      if (event.type === 'response.completed' || event.type === 'response.failed' || event.type === 'error') waiting.shift()(event);
    });
    const question = 'gateway stream response model token '.repeat(70);
    const times = [];
    let previous;
    for (let i = 0; i < TURNS; i++) {
      const t0 = performance.now();
      ws.send(JSON.stringify({ type: 'response.create', model: 'switchyard-sim', input: `${i} ${question}`, previous_response_id: previous, store: false }));
      const event = await new Promise((done) => waiting.push(done));
      if (event.type !== 'response.completed') throw new Error(`turn ${i}: ${JSON.stringify(event).slice(0, 300)}`);
      times.push(performance.now() - t0);
      previous = event.response.id;
    }
    ws.close();
    const early = median(times.slice(20, 60));
    const late = median(times.slice(TURNS - 40));
    console.log(`${root}: median per turn, turns 20–60 ${early.toFixed(2)} ms, turns ${TURNS - 40}–${TURNS} ${late.toFixed(2)} ms (${(late / early).toFixed(2)} ×)`);
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`ws-conversation failed: ${err instanceof Error ? (err.stack ?? err.message) : err}`);
    process.exit(1);
  },
);
