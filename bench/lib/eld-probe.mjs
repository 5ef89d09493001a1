// Preloaded into a gateway child (NODE_OPTIONS=--import=<this file>, BENCH_ELD_FILE=<path>):
// measures the event loop's delay with monitorEventLoopDelay, inside the gateway, without any
// gateway code knowing. On SIGUSR2 it writes {maxMs, p99Ms, meanMs, count} since the previous
// signal to BENCH_ELD_FILE and starts over, so the benchmark can bracket one phase.
import { renameSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_ELD_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  process.on('SIGUSR2', () => {
    // written aside and renamed into place: the benchmark never reads half a file
    writeFileSync(`${file}.tmp`, JSON.stringify({ maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6, meanMs: h.mean / 1e6, count: h.count }));
    renameSync(`${file}.tmp`, file);
    h.reset();
  });
}
