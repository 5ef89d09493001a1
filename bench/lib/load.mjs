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
  let sum = 0;
  for (const v of s) sum += v;
  return {
    connections,
    seconds: elapsed,
    requests: ok,
    rps: ok / elapsed,
    latencyMs: { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), mean: s.length ? sum / s.length : NaN, max: s.length ? s[s.length - 1] : NaN },
    non2xx: other,
    errors: result.errors,
    timeouts: result.timeouts,
    before: hookBefore,
    after: hookAfter,
  };
}
