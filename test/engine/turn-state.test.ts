// A turn's state on the failure paths (issue 9 #1, #5c): a conversation is never left locked by a
// turn that ended — whichever way it ended — and background runs beyond `background.maxConcurrent`
// really wait in the store's queue, in order.
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import pino from 'pino';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const post = (url: string, body: unknown) => fetch(`${url}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('a conversation is free again as soon as a turn on it ends, however it ends', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  /** The next turn on the conversation is served (not `conversation_locked`), and sees no trace of the failed one. */
  async function expectFree(conversation: string): Promise<void> {
    const next = await client.responses.create({ model: 'm', conversation, input: 'are you there?' });
    expect(next.status).toBe('completed');
    const seen = tg.simulator.requests.at(-1)!.body.messages.map((m: any) => m.content);
    expect(seen).toEqual(['are you there?']);
  }

  for (const status of [400, 502, 504]) {
    it(`blocking: the upstream answers ${status} before the first event`, async () => {
      const { id } = await client.conversations.create({});
      const failed = await post(tg.baseURL, { model: 'm', conversation: id, input: scripted({ rounds: [{ status, error: 'no' }] }) });
      expect(failed.status).toBeGreaterThanOrEqual(400);
      expect(((await failed.json()) as any).error.code).not.toBe('conversation_locked');
      await expectFree(id);
    });
  }

  it('streaming: the upstream refuses before the first event', async () => {
    const { id } = await client.conversations.create({});
    const failed = await post(tg.baseURL, { model: 'm', conversation: id, stream: true, input: scripted({ rounds: [{ status: 400, error: 'context too long' }] }) });
    expect(failed.status).toBe(400);
    await failed.text();
    await expectFree(id);
  });

  it('streaming: the upstream cuts the stream mid-response (the turn fails after its first events)', async () => {
    const { id } = await client.conversations.create({});
    const events = await readSse(await post(tg.baseURL, { model: 'm', conversation: id, stream: true, input: scripted({ rounds: [{ text: 'a b c d', chunks: 4, close_after_chunks: 2 }] }) }));
    expect(events.at(-1)!.type).toBe('response.failed');
    await expectFree(id);
  });

  it('background: the run fails before its first event', async () => {
    const { id } = await client.conversations.create({});
    const created = await client.responses.create({ model: 'm', conversation: id, background: true, input: scripted({ rounds: [{ status: 400, error: 'nope' }] }) });
    await waitFor(async () => ((await client.responses.retrieve(created.id)).status === 'failed' ? true : undefined));
    await expectFree(id);
  });

  it('WebSocket mode: a turn the upstream refuses', async () => {
    const { id } = await client.conversations.create({});
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const answer = new Promise<any>((resolve) => ws.once('message', (data) => resolve(JSON.parse(String(data)))));
    ws.send(JSON.stringify({ type: 'response.create', model: 'm', conversation: id, input: scripted({ rounds: [{ status: 400, error: 'nope' }] }) }));
    expect((await answer).type).toBe('error');
    ws.close();
    await expectFree(id);
  });

  it('a client that disconnects mid-turn', async () => {
    const { id } = await client.conversations.create({});
    const res = await post(tg.baseURL, { model: 'm', conversation: id, stream: true, input: scripted({ rounds: [{ text: 'x y z', hang_after_chunks: 1 }] }) });
    const reader = res.body!.getReader();
    await reader.read();
    const aborted = tg.simulator.waitForAbort(8_000);
    await reader.cancel();
    await aborted;
    await waitFor(async () => {
      try {
        await expectFree(id);
        return true;
      } catch (err) {
        if ((err as { code?: string }).code === 'conversation_locked') return undefined;
        throw err;
      }
    });
  });
});

describe('a turn longer than staleAfterMs keeps its conversation (the heartbeat renews the lease)', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { background: { heartbeatMs: 100, staleAfterMs: 800 } } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('another turn is refused while it runs; it completes and its items are appended', async () => {
    const { id } = await client.conversations.create({});
    const long = client.responses.create({ model: 'm', conversation: id, input: scripted({ rounds: [{ text: 'a slow and steady answer that takes its time', chunks: 20, delay_ms: 150 }] }, 'long turn') });
    await waitFor(async () => (tg.simulator.requests.some((r) => JSON.stringify(r.body).includes('long turn')) ? true : undefined));
    for (const wait of [100, 900, 900]) {
      await new Promise((r) => setTimeout(r, wait)); // well past staleAfterMs by the last one
      await expect(client.responses.create({ model: 'm', conversation: id, input: 'me too' })).rejects.toMatchObject({ status: 400, code: 'conversation_locked' });
    }
    expect((await long).status).toBe('completed');
    const items = await client.conversations.items.list(id, { order: 'asc' });
    expect(items.data.map((item: any) => item.role)).toEqual(['user', 'assistant']);
  });
});

describe('a turn and its conversation items are stored together or not at all (SQLite)', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway();
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('the append fails: a retryable error, the response not completed, the conversation unchanged', async () => {
    // a real fault in the gateway's own file: inserting an item that mentions "poison" is refused
    const db = new Database(join(tg.dataDir, 'switchyard.db'));
    db.exec(`CREATE TRIGGER poison BEFORE INSERT ON conversation_items WHEN NEW.item LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'conversation append refused'); END`);
    try {
      const { id } = await client.conversations.create({});
      const res = await post(tg.baseURL, { model: 'm', conversation: id, input: 'poison pill' });
      expect(res.status).toBe(503);
      expect(res.headers.get('x-should-retry')).toBe('true');
      const error = ((await res.json()) as any).error;
      expect(error.code).toBe('store_unavailable');
      const responseId = /response (resp_\w+)/.exec(error.message)![1];
      expect((await client.responses.retrieve(responseId)).status).toBe('failed');
      expect((await client.conversations.items.list(id)).data).toEqual([]);
      // a turn that can be appended is, with its response
      db.exec('DROP TRIGGER poison');
      const ok = await client.responses.create({ model: 'm', conversation: id, input: 'healthy' });
      expect(ok.status).toBe('completed');
      expect((await client.conversations.items.list(id, { order: 'asc' })).data.map((item: any) => item.role)).toEqual(['user', 'assistant']);
    } finally {
      db.close();
    }
  });
});

/** A store whose first writes of background runs fail: the launch fails after the turn took its lease. */
class FailingLaunchStore extends SqliteResponseStore {
  failRegistrations = 0;
  override async registerRun(id: string, owner: string, queued?: { request: string }): Promise<void> {
    if (this.failRegistrations > 0) {
      this.failRegistrations--;
      throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    }
    return super.registerRun(id, owner, queued);
  }
}

describe('a background launch that fails releases the conversation', () => {
  let sim: Simulator;
  let gateway: Gateway;
  let dir: string;
  let store: FailingLaunchStore;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-launch-fail-'));
    const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', upstream: { url: sim.url } } as any });
    // the same SQLite file as the gateway's conversations, on a connection of its own
    store = new FailingLaunchStore(dir);
    gateway = await startGateway({ config, logger: pino({ level: 'silent' }), store });
  });
  afterAll(async () => {
    await gateway.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('503 for the launch, then the next turn on the conversation is served', async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'test', maxRetries: 0 });
    const { id } = await client.conversations.create({});
    store.failRegistrations = 1;
    await expect(client.responses.create({ model: 'm', conversation: id, background: true, input: 'hello' })).rejects.toMatchObject({ status: 503 });
    const next = await client.responses.create({ model: 'm', conversation: id, input: 'again' });
    expect(next.output_text).toBe('You said: again');
  });
});

describe('background.maxConcurrent: the rest wait in the queue, first in first out', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { background: { heartbeatMs: 100, staleAfterMs: 2_000, maxConcurrent: 1 } } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('one runs, two are queued (and stay queued), then each runs in the order it came', async () => {
    const slow = (n: number) => scripted({ rounds: [{ text: `run ${n} one two three`, chunks: 4, delay_ms: 150 }] }, `run ${n}`);
    const runs: OpenAI.Responses.Response[] = [];
    for (const n of [1, 2, 3]) runs.push(await client.responses.create({ model: 'm', input: slow(n), background: true }));
    await waitFor(async () => ((await client.responses.retrieve(runs[0].id)).status === 'in_progress' ? true : undefined));
    // while the first runs, the others are queued, and the upstream has been asked only once
    for (let i = 0; i < 3; i++) {
      expect((await client.responses.retrieve(runs[1].id)).status).toBe('queued');
      expect((await client.responses.retrieve(runs[2].id)).status).toBe('queued');
      expect(tg.simulator.requests.filter((r) => JSON.stringify(r.body).includes('run ')).length).toBeLessThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 100));
    }
    const done = await Promise.all(runs.map((run) => waitFor(async () => {
      const r = await client.responses.retrieve(run.id);
      return r.status === 'completed' ? r : undefined;
    }, 20_000)));
    expect(done.map((r) => r.output_text)).toEqual(['run 1 one two three', 'run 2 one two three', 'run 3 one two three']);
    // the upstream saw them one at a time, in order
    const order = tg.simulator.requests.map((r) => /run (\d)/.exec(JSON.stringify(r.body))?.[1]).filter(Boolean);
    expect(order).toEqual(['1', '2', '3']);
  });

  it('a queued run can be cancelled at once, without waiting for a slot', async () => {
    const first = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'a b c', hang_after_chunks: 1 }] }), background: true });
    const second = await client.responses.create({ model: 'm', input: 'queued one', background: true });
    expect((await client.responses.retrieve(second.id)).status).toBe('queued');
    const cancelled = await client.responses.cancel(second.id);
    expect(cancelled.status).toBe('cancelled');
    const events = await readSse(await fetch(`${tg.baseURL}/responses/${second.id}?stream=true`));
    expect(events.at(-1)!.response.status).toBe('cancelled');
    expect((await client.responses.cancel(first.id)).status).toBe('cancelled');
  });
});
