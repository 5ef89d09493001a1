// Two gateway replicas on one PostgreSQL schema, one of them a process of its own so it can be
// stalled (SIGSTOP) and killed (SIGKILL) for real (issue 9 #5, #6):
// - a follower on the other replica always receives the terminal event (50 runs);
// - an owner stalled past staleAfterMs loses its run to the other replica's sweep, then stops,
//   aborts its upstream and writes nothing;
// - queued runs of a dead replica are taken over and run by the other;
// - a turn's response and its conversation items are stored together or not at all.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PG_URL, probePostgres, REQUIRE_PG } from '../helpers/postgres.js';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawned-gateway.js';

const unavailable = await probePostgres(PG_URL);
if (unavailable && REQUIRE_PG) throw new Error(`SWITCHYARD_REQUIRE_POSTGRES=1 but ${unavailable}`);
if (unavailable) console.warn(`replicas-fencing: ${unavailable}; the two-replica tests are skipped`);

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await sleep(50);
  }
}

describe.skipIf(unavailable !== undefined)('replicas on PostgreSQL: fencing, followers, queue take-over, atomic turns', () => {
  const schema = `switchyard_fencing_${randomBytes(5).toString('hex')}`;
  // staleAfterMs generous enough that a loaded machine does not make a live replica look dead
  const background = { heartbeatMs: 100, staleAfterMs: 3_000 };
  let dir: string;
  let sim: Simulator;
  let a: SpawnedGateway; // the owner: a process of its own, with one background slot
  let b: TestGateway; // the other replica, in this process
  let clientA: OpenAI;
  let clientB: OpenAI;
  let db: pg.Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-fencing-'));
    sim = await startSimulator({ port: 0 });
    const store = { kind: 'postgres', url: PG_URL, schema };
    b = await startTestGateway({ simulator: sim, config: { store, background: { ...background, maxConcurrent: 8 } } as any });
    a = await spawnGateway({ dir, name: 'a', upstream: sim.url, config: { store, background: { ...background, maxConcurrent: 1 } } });
    clientA = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'test', maxRetries: 0 });
    clientB = new OpenAI({ baseURL: b.baseURL, apiKey: 'test', maxRetries: 0 });
    db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
  }, 30_000);

  afterAll(async () => {
    a?.kill('SIGCONT');
    a?.kill('SIGKILL');
    await b?.close();
    await sim?.close();
    await db?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await db?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a follower on the other replica always receives the terminal event (50 runs)', async () => {
    let followed = 0;
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(
        Array.from({ length: 5 }, async (_, i) => {
          const created = await clientA.responses.create({ model: 'm', input: scripted({ rounds: [{ text: `run ${batch}.${i} finishing now`, chunks: 3 }] }), background: true });
          const events = await readSse(await fetch(`${b.baseURL}/responses/${created.id}?stream=true`));
          events.forEach((e, n) => expect(e.sequence_number).toBe(n));
          expect(events.filter((e) => TERMINAL.has(e.type))).toHaveLength(1);
          expect(events.at(-1)!.type).toBe('response.completed');
          followed++;
        }),
      );
    }
    expect(followed).toBe(50);
  }, 120_000);

  it('an owner stalled past staleAfterMs loses its run to the other replica, then stops and writes nothing', async () => {
    const marker = `stalled-${randomBytes(3).toString('hex')}`;
    const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    const created = await clientA.responses.create({ model: 'm', input: scripted({ rounds: [{ text: words, chunks: 100, delay_ms: 100 }] }, marker), background: true });
    await waitFor(async () => ((await clientB.responses.retrieve(created.id)).status === 'in_progress' ? true : undefined));
    await sleep(500); // some events in the log

    a.kill('SIGSTOP');
    try {
      const failed = await waitFor(async () => {
        const r = await clientB.responses.retrieve(created.id);
        return r.status === 'failed' ? r : undefined;
      });
      expect(failed.error).toMatchObject({ code: 'server_error' });
      expect(failed.error!.message).toMatch(/stopped before it finished/);
      const atFailure = await readSse(await fetch(`${b.baseURL}/responses/${created.id}?stream=true`));
      expect(atFailure.at(-1)!.type).toBe('response.failed');
      atFailure.forEach((e, n) => expect(e.sequence_number).toBe(n));

      // the stalled owner wakes up: it must find that it lost the run, abort its upstream and write nothing
      a.kill('SIGCONT');
      const upstream = await waitFor(async () => {
        const request = sim.requests.find((r) => JSON.stringify(r.body).includes(marker));
        return request && (request.aborted || request.finished) ? request : undefined;
      });
      expect(upstream.aborted).toBe(true);
      await sleep(1_500); // time enough for any late write to land
      expect(await clientB.responses.retrieve(created.id)).toEqual(failed);
      expect(await readSse(await fetch(`${b.baseURL}/responses/${created.id}?stream=true`))).toEqual(atFailure);
      // and the owner is still serving
      expect((await clientA.responses.create({ model: 'm', input: 'still alive?' })).output_text).toBe('You said: still alive?');
    } finally {
      a.kill('SIGCONT');
    }
  }, 60_000);

  it('a turn and its conversation items are stored together or not at all', async () => {
    // a real database fault: inserting an item that mentions "poison" into the conversation fails
    await db.query(`
      CREATE FUNCTION "${schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.item::text LIKE '%poison%' THEN RAISE EXCEPTION 'conversation append refused'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER poison BEFORE INSERT ON "${schema}".conversation_items FOR EACH ROW EXECUTE FUNCTION "${schema}".poison();`);
    try {
      const conversation = await clientB.conversations.create({});
      const res = await fetch(`${b.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', conversation: conversation.id, input: 'poison pill' }) });
      // not completed: a retryable error, and nothing in the conversation
      expect(res.status).toBe(503);
      expect(res.headers.get('x-should-retry')).toBe('true');
      const error = ((await res.json()) as any).error;
      expect(error.code).toBe('store_unavailable');
      const id = /response (resp_\w+)/.exec(error.message)![1];
      expect((await clientB.responses.retrieve(id)).status).toBe('failed');
      const items = await clientB.conversations.items.list(conversation.id);
      expect(items.data).toEqual([]);

      // streamed: one terminal event, response.failed
      const events = await readSse(await fetch(`${b.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', conversation: conversation.id, input: 'poison again', stream: true }) }));
      expect(events.filter((e) => TERMINAL.has(e.type)).map((e) => e.type)).toEqual(['response.failed']);
      expect((await clientB.conversations.items.list(conversation.id)).data).toEqual([]);

      // and a turn that can be appended is stored with its items
      const ok = await clientB.responses.create({ model: 'm', conversation: conversation.id, input: 'a healthy turn' });
      expect(ok.status).toBe('completed');
      const after = await clientB.conversations.items.list(conversation.id, { order: 'asc' });
      expect(after.data.map((item: any) => item.role)).toEqual(['user', 'assistant']);
    } finally {
      await db.query(`DROP TRIGGER poison ON "${schema}".conversation_items; DROP FUNCTION "${schema}".poison()`);
    }
  });

  it('queued runs of a replica that died are taken over and run by the other', async () => {
    const hanging = await clientA.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'never ends', hang_after_chunks: 1 }] }), background: true });
    await waitFor(async () => ((await clientB.responses.retrieve(hanging.id)).status === 'in_progress' ? true : undefined));
    // A has one slot: these wait in the queue
    const queued = [];
    for (const n of [1, 2]) queued.push(await clientA.responses.create({ model: 'm', input: `queued turn ${n}`, background: true }));
    await sleep(300);
    for (const run of queued) expect((await clientB.responses.retrieve(run.id)).status).toBe('queued');

    a.kill('SIGKILL');
    await a.exited;
    const failed = await waitFor(async () => {
      const r = await clientB.responses.retrieve(hanging.id);
      return r.status === 'failed' ? r : undefined;
    });
    expect(failed.error!.message).toMatch(/stopped before it finished/);
    for (const [i, run] of queued.entries()) {
      const done = await waitFor(async () => {
        const r = await clientB.responses.retrieve(run.id);
        return r.status === 'completed' ? r : undefined;
      });
      expect(done.output_text).toBe(`You said: queued turn ${i + 1}`);
      const events = await readSse(await fetch(`${b.baseURL}/responses/${run.id}?stream=true`));
      expect(events.map((e) => e.type).slice(0, 3)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
      expect(events.at(-1)!.type).toBe('response.completed');
    }
  }, 60_000);
});
