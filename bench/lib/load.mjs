// autocannon wrapper: a warm-up run, then a measured run whose latencies are collected from
// every 2xx response (autocannon's own histogram stores whole milliseconds, too coarse for
// sub-millisecond differences), with optional before/after hooks (CPU readings).
import autocannon from 'autocannon';
import { percentile, sorted } from './stats.mjs';

function runOnce(opts, onResponse) {
  const instance = autocannon({
    ...opts,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(opts.headers ?? {}) },
    body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    pipelining: 1,
    timeout: 10,
  });
  if (onResponse) instance.on('response', onResponse);
  return instance; // thenable: resolves to autocannon's result object
}

/**
 * Runs `warmupSeconds` of load (discarded), then `seconds` measured (`headers` sent with each request).
 * Returns {requests, rps, p50, p90, p99, mean, non2xx, errors, timeouts, seconds, ...hook results}.
 */
export async function measure({ url, body, connections, seconds, warmupSeconds, before, after, headers }) {
  if (warmupSeconds > 0) await runOnce({ url, body, connections, duration: warmupSeconds, headers });
  const latencies = [];
  let ok = 0;
  let other = 0;
  const hookBefore = before ? await before() : undefined;
  const started = process.hrtime.bigint();
  const result = await runOnce({ url, body, connections, duration: seconds, headers }, (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) {
      ok++;
      latencies.push(responseTime);
    } else other++;
  });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const hookAfter = after ? await after() : undefined;
  const s = sorted(latencies);
  return {
    connections,
    seconds: elapsed,
    requests: ok,
    rps: ok / elapsed,
    latencyMs: latencySummary(s),
    non2xx: other,
    errors: result.errors,
    timeouts: result.timeouts,
    before: hookBefore,
    after: hookAfter,
    latencies: s,
  };
}

/**
 * Load runs measured in alternating slices (A B C A B C …, `slices` of each, every slice its own
 * `warmupSeconds` then `seconds / slices` measured), merged per run: requests, wall time and
 * latencies pooled; `deltas` sums each number the `before` / `after` hooks return (after − before,
 * e.g. CPU time). The machine drifts over the seconds a whole run takes (this VM's speed moves by
 * tens of per cent within a minute); in slices the drift falls on every run alike, so a difference
 * or a ratio between runs measures the servers rather than the minute each was measured in.
 */
export async function measureInterleaved(runs, { slices, seconds, warmupSeconds }) {
  const parts = runs.map(() => []);
  for (let slice = 0; slice < slices; slice++) {
    for (const [i, run] of runs.entries()) parts[i].push(await measure({ ...run, seconds: seconds / slices, warmupSeconds }));
  }
  return runs.map((run, i) => merged(run.connections, parts[i]));
}

function merged(connections, parts) {
  const latencies = sorted(parts.flatMap((p) => Array.from(p.latencies)));
  const requests = parts.reduce((sum, p) => sum + p.requests, 0);
  const seconds = parts.reduce((sum, p) => sum + p.seconds, 0);
  const deltas = {};
  for (const p of parts) {
    for (const [key, after] of Object.entries(p.after ?? {})) deltas[key] = (deltas[key] ?? 0) + after - p.before[key];
  }
  const total = (key) => parts.reduce((n, p) => n + (p[key] ?? 0), 0);
  return {
    connections,
    seconds,
    requests,
    rps: requests / seconds,
    latencyMs: latencySummary(latencies),
    non2xx: total('non2xx'),
    errors: total('errors'),
    timeouts: total('timeouts'),
    slices: parts.length,
    deltas,
  };
}

/** p50, p90, p99, mean and max of latencies sorted ascending (ms). */
function latencySummary(s) {
  let sum = 0;
  for (const v of s) sum += v;
  return { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), mean: s.length ? sum / s.length : NaN, max: s.length ? s[s.length - 1] : NaN };
}
