// What a request leaves behind besides CPU time, for bench/pipeline.mjs (BENCH_PIPELINE_COUNT=1):
// the promises it creates (async_hooks) and the bytes it allocates, garbage included (V8's
// sampling heap profiler keeps the samples of objects the GC has already collected when asked to).
// Each async function a request passes through costs a promise or two and a generator object with
// its registers; all of it is garbage a moment later, and the scavenges that collect it are part
// of the gateway's CPU per request and of its pauses.
import { createHook } from 'node:async_hooks';
import { Session } from 'node:inspector/promises';

/** Promises created per request over `n` sequential requests (`one()` runs one). */
export async function promisesPerRequest(one, n) {
  let count = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') count++;
    },
  });
  hook.enable();
  try {
    for (let i = 0; i < n; i++) await one();
  } finally {
    hook.disable();
  }
  return count / n;
}

/**
 * Bytes allocated per request over `n` requests (`batch(n)` runs them), estimated from samples
 * every `interval` bytes; with the `top` sites (function, file:line) by bytes per request.
 */
export async function bytesPerRequest(batch, n, { interval = 256, top = 0 } = {}) {
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', { samplingInterval: interval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    await batch(n);
    const { profile } = await session.post('HeapProfiler.stopSampling');
    const bySite = new Map();
    let total = 0;
    const walk = (node) => {
      const { functionName, url, lineNumber } = node.callFrame;
      total += node.selfSize;
      if (node.selfSize > 0) {
        const site = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`;
        bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      }
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    const sites = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top).map(([site, bytes]) => ({ site, bytes: bytes / n }));
    return { bytes: total / n, sites };
  } finally {
    await session.post('HeapProfiler.disable').catch(() => undefined);
    session.disconnect();
  }
}
