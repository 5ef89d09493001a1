// The simulator as a child process of the benchmark: the same `startSimulator` that
// `switchyard simulate` runs, plus an IPC channel so the parent can read the simulator's
// abort / active counters (used to check that aborted client streams reach the upstream).
import { startSimulator } from '../../dist/simulate/server.js';

const port = Number(process.env.BENCH_SIM_PORT ?? 0);
const sim = await startSimulator({ port, host: '127.0.0.1' });

process.on('message', (msg) => {
  if (msg?.cmd === 'stats') {
    process.send?.({ id: msg.id, aborted: sim.abortedCount(), active: sim.activeCount() });
  } else if (msg?.cmd === 'requests') {
    // the bodies of the last `n` requests (the exact upstream requests a gateway sent), then
    // the log is emptied so load runs do not grow the simulator's memory without bound
    process.send?.({ id: msg.id, bodies: msg.n > 0 ? sim.requests.slice(-msg.n).map((r) => r.body) : [] });
    sim.requests.length = 0;
  }
});
process.on('disconnect', () => {
  // the parent went away: do not linger
  sim.close().finally(() => process.exit(0));
});
const stop = () => sim.close().then(() => process.exit(0), () => process.exit(1));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

process.send?.({ ready: true, url: sim.url, port: sim.port });
