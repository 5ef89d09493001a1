import type { HeaderTarget } from '../observability/request-context.js';
import type { ApiKey } from '../auth/key-ring.js';
import { Errors, type GatewayError } from '../errors.js';

export interface LimiterOptions {
  /** Turns running at once on this gateway (0 = no limit). */
  maxConcurrentTurns: number;
  /** Event streams open at once on this gateway (0 = no limit). */
  maxOpenStreams: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Admission limits, answered at once — an excess request gets a `429` with `Retry-After`, never a
 * wait: per key, requests per minute (a token bucket of `rpm` tokens refilled continuously, so a
 * burst of `rpm` is allowed and then one every 60/rpm s) and turns at once; per gateway, turns
 * and open event streams at once. Counts are per process: with replicas, each enforces its own.
 */
export class Limiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly turnsByKey = new Map<string, number>();
  private turns = 0;
  private streams = 0;

  constructor(private readonly options: LimiterOptions) {}

  /** Counts one request of `key` against its rpm; sets the `x-ratelimit-*` headers on `res`; a 429 when none is left. */
  request(key: ApiKey, res: HeaderTarget | undefined, now = Date.now()): void {
    const rpm = key.rpm;
    if (rpm === undefined) return;
    const perMs = rpm / 60_000;
    let bucket = this.buckets.get(key.name);
    if (!bucket) this.buckets.set(key.name, (bucket = { tokens: rpm, at: now }));
    bucket.tokens = Math.min(rpm, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const resetMs = (rpm - bucket.tokens) / perMs;
    if (res && !res.headersSent) {
      res.setHeader('x-ratelimit-limit-requests', String(rpm));
      res.setHeader('x-ratelimit-remaining-requests', String(Math.floor(bucket.tokens)));
      res.setHeader('x-ratelimit-reset-requests', formatSeconds(resetMs));
    }
    if (allowed) return;
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
    res?.setHeader('retry-after', String(retryAfter));
    throw Errors.rateLimited(`Rate limit reached for key '${key.name}': ${rpm} requests per minute. Retry in ${retryAfter} s.`);
  }

  /** Takes a turn slot (the gateway's and the key's); the returned function gives it back (once). */
  turn(key: ApiKey | undefined, res?: HeaderTarget): () => void {
    const max = this.options.maxConcurrentTurns;
    if (max > 0 && this.turns >= max) throw this.busy(res, `The gateway is running its limit of ${max} turns at once; retry shortly.`);
    const perKey = key?.maxConcurrent;
    const name = key?.name;
    const running = name !== undefined ? (this.turnsByKey.get(name) ?? 0) : 0;
    if (perKey !== undefined && running >= perKey) throw this.busy(res, `Key '${name}' is running its limit of ${perKey} turns at once; retry when one finishes.`);
    this.turns++;
    if (name !== undefined) this.turnsByKey.set(name, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.turns--;
      if (name === undefined) return;
      const left = (this.turnsByKey.get(name) ?? 1) - 1;
      if (left > 0) this.turnsByKey.set(name, left);
      else this.turnsByKey.delete(name);
    };
  }

  /** Takes an open-stream slot; the returned function gives it back (once). */
  stream(res?: HeaderTarget): () => void {
    const max = this.options.maxOpenStreams;
    if (max > 0 && this.streams >= max) throw this.busy(res, `The gateway has its limit of ${max} event streams open; retry shortly.`);
    this.streams++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.streams--;
    };
  }

  get runningTurns(): number {
    return this.turns;
  }

  private busy(res: HeaderTarget | undefined, message: string): GatewayError {
    if (res && !res.headersSent) res.setHeader('retry-after', '1');
    return Errors.rateLimited(message);
  }
}

/** `1.5s`, `12s`, `1m30s` — the form of OpenAI's `x-ratelimit-reset-*` headers. */
function formatSeconds(ms: number): string {
  const seconds = Math.max(0, ms / 1000);
  if (seconds < 60) return `${Math.round(seconds * 1000) / 1000}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m${Math.round(seconds - minutes * 60)}s`;
}
