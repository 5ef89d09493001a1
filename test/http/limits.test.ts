// Limits: per key requests per minute and concurrent turns, and the gateway's concurrent turns and
// open streams — an excess request is a 429 (rate_limit_exceeded) with Retry-After at once, never a wait.
import OpenAI, { RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Limiter } from '../../src/http/limiter.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const KEY = 'sk-limited-0123456789abcdef';
const OTHER = 'sk-other-0123456789abcdef0';

/** A streaming turn that takes a while (the simulator waits before each chunk). */
const slowInput = scripted({ rounds: [{ text: 'one two three four five six', delay_ms: 150 }] });

describe('per key', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      config: { auth: { keys: [{ name: 'limited', key: KEY, rpm: 3, maxConcurrent: 1 }, { name: 'other', key: OTHER }] } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('rpm: the x-ratelimit headers count down, then a 429 with Retry-After; other keys are not affected', async () => {
    const headers = { authorization: `Bearer ${KEY}` };
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.gateway.url}/v1/models`, { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(res.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$/);
      remaining.push(res.headers.get('x-ratelimit-remaining-requests')!);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await fetch(`${gw.gateway.url}/v1/models`, { headers });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    // one request per 20 s comes back
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(((await limited.json()) as { error: unknown }).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    // the official SDK sees a RateLimitError (no retries asked for)
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: KEY, maxRetries: 0 });
    await expect(client.responses.create({ model: 'sim', input: 'hi' })).rejects.toBeInstanceOf(RateLimitError);
    // a key without rpm is not limited
    const other = new OpenAI({ baseURL: gw.baseURL, apiKey: OTHER, maxRetries: 0 });
    expect((await other.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');
  });
});

describe('per key concurrency', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { auth: { keys: [{ name: 'one-at-a-time', key: KEY, maxConcurrent: 1 }, { name: 'other', key: OTHER }] } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('a second turn while one runs is a 429 at once; after it ends, turns are accepted again', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: KEY, maxRetries: 0 });
    const running = client.responses.create({ model: 'sim', input: slowInput });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const second = await client.responses.create({ model: 'sim', input: 'hi' }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(RateLimitError);
    expect((second as RateLimitError).headers?.get('retry-after')).toBe('1');
    expect(Date.now() - started).toBeLessThan(500);
    // another key runs meanwhile
    const other = new OpenAI({ baseURL: gw.baseURL, apiKey: OTHER, maxRetries: 0 });
    expect((await other.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');
    expect((await running).status).toBe('completed');
    expect((await client.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');
  });
});

describe('gateway-wide', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { limits: { maxConcurrentTurns: 2, maxOpenStreams: 1 } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('open streams: a second stream is a 429 while one is open, a blocking turn still runs', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'x', maxRetries: 0 });
    const stream = await client.responses.create({ model: 'sim', input: slowInput, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const second = await client.responses.create({ model: 'sim', input: 'hi', stream: true }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(RateLimitError);
    expect((await client.responses.create({ model: 'sim', input: 'hi' })).status).toBe('completed');
    let last;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) last = next.value;
    expect(last?.type).toBe('response.completed');
    // the slot came back when the stream closed
    const again = await client.responses.create({ model: 'sim', input: 'hi', stream: true });
    for await (const _event of again) void _event;
  });

  it('concurrent turns: the third at once is a 429, never a hang', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'x', maxRetries: 0 });
    const running = [client.responses.create({ model: 'sim', input: slowInput }), client.responses.create({ model: 'sim', input: slowInput })];
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expect(client.responses.create({ model: 'sim', input: 'hi' })).rejects.toBeInstanceOf(RateLimitError);
    for (const r of await Promise.all(running)) expect(r.status).toBe('completed');
  });
});

describe('Limiter', () => {
  it('refills the bucket continuously: rpm 60 = one request a second after the burst', () => {
    const limiter = new Limiter({ maxConcurrentTurns: 0, maxOpenStreams: 0 });
    const key = { name: 'k', tenant: 'k', rpm: 60 };
    const t0 = 1_000_000;
    for (let i = 0; i < 60; i++) limiter.request(key, undefined, t0);
    expect(() => limiter.request(key, undefined, t0)).toThrow(/60 requests per minute/);
    expect(() => limiter.request(key, undefined, t0 + 500)).toThrow();
    expect(() => limiter.request(key, undefined, t0 + 1_001)).not.toThrow();
    expect(() => limiter.request(key, undefined, t0 + 1_002)).toThrow();
  });

  it('gives a turn slot back once, whatever calls the release', () => {
    const limiter = new Limiter({ maxConcurrentTurns: 1, maxOpenStreams: 0 });
    const release = limiter.turn(undefined);
    expect(() => limiter.turn(undefined)).toThrow();
    release();
    release();
    const again = limiter.turn(undefined);
    expect(() => limiter.turn(undefined)).toThrow();
    again();
    expect(limiter.runningTurns).toBe(0);
  });
});
