// kill -9 (issue 9 #16 and "Done when"): a gateway process with a SQLite file is killed under
// load from several clients — blocking and streaming, foreground and background — and started
// again on the same file, five times. Every response a client received as completed must be
// retrievable and identical afterwards, and the restarted gateway's sweep must leave nothing
// `in_progress` (or `queued`): a dead process's responses become `failed` (a server error, not the
// client's) and can be deleted; the conversation it was working on is free again at once.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { readSse, scripted } from '../helpers/gateway.js';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawned-gateway.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// short, so the restarted gateway's sweep comes quickly; generous enough for a loaded machine
const BACKGROUND = { heartbeatMs: 100, staleAfterMs: 1_000 };

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await sleep(50);
  }
}

describe('kill -9', () => {
  let sim: Simulator;
  let dir: string;
  let gateway: SpawnedGateway | undefined;

  const start = async () => {
    gateway = await spawnGateway({ dir, name: 'gateway', upstream: sim.url, config: { background: BACKGROUND } });
    return gateway;
  };
  const kill9 = async () => {
    gateway!.kill('SIGKILL');
    await gateway!.exited;
  };

  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-kill9-'));
  });
  afterAll(async () => {
    gateway?.kill('SIGKILL');
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a foreground response running at kill -9 becomes failed (not the client\'s fault), can be deleted, and frees its conversation', async () => {
    const first = await start();
    let client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: 'test', maxRetries: 0 });
    const conversation = await client.conversations.create({});
    // a blocking, stored turn on a conversation that hangs mid-stream
    const marker = `fg-${randomBytes(3).toString('hex')}`;
    const pending = fetch(`${first.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', conversation: conversation.id, input: scripted({ rounds: [{ text: 'never finishes', hang_after_chunks: 1 }] }, marker) }),
    }).catch((err: unknown) => err);
    await waitFor(async () => (sim.requests.some((r) => JSON.stringify(r.body).includes(marker)) ? true : undefined));
    const running = new Database(join(dir, 'data', 'switchyard.db'), { readonly: true });
    const id = await waitFor(async () => (running.prepare("SELECT id FROM responses WHERE status = 'in_progress'").pluck().get() as string | undefined));
    running.close();
    expect((await client.responses.retrieve(id)).status).toBe('in_progress');

    await kill9();
    expect(await pending).toBeInstanceOf(Error);
    const second = await start();
    client = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: 'test', maxRetries: 0 });
    const failed = await waitFor(async () => {
      const r = await client.responses.retrieve(id);
      return r.status === 'failed' ? r : undefined;
    });
    expect(failed.error).toMatchObject({ code: 'server_error' });
    expect(failed.error!.message).toMatch(/stopped before it finished/);
    expect(failed.error!.message).not.toMatch(/client/i);
    // the conversation the dead process held is free again (its lease expired with the process)
    const next = await waitFor(async () => client.responses.create({ model: 'm', conversation: conversation.id, input: 'after the crash' }).catch((err: { code?: string }) => {
      if (err.code === 'conversation_locked') return undefined;
      throw err;
    }), 5_000);
    expect(next.output_text).toBe('You said: after the crash');
    expect(await client.responses.delete(id)).toMatchObject({ id, deleted: true });
    await kill9();
  }, 60_000);

  it('under load, five times: every completed response is retrievable and identical, nothing left in_progress', async () => {
    const received = new Map<string, unknown>(); // id → the completed response a client received
    let requests = 0;
    let interrupted = 0;
    const KILLS = 5;

    for (let kill = 0; kill < KILLS; kill++) {
      const g = await start();
      const base = `${g.url}/v1`;
      let stop = false;
      const script = (n: number) => scripted({ rounds: [{ text: `answer ${n} with a few words in it`, chunks: 6, delay_ms: 25 }] }, `load ${kill}.${n}`);
      const post = (body: unknown) => fetch(`${base}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

      // four clients, each in its own mode, requesting back to back until the kill
      const modes: Array<(n: number) => Promise<void>> = [
        async (n) => {
          const res = await post({ model: 'm', input: script(n) });
          const body = (await res.json()) as { id: string; status: string };
          if (res.ok && body.status === 'completed') received.set(body.id, body);
        },
        async (n) => {
          const events = await readSse(await post({ model: 'm', input: script(n), stream: true }));
          const done = events.find((e) => e.type === 'response.completed');
          if (done) received.set(done.response.id, done.response);
        },
        async (n) => {
          const res = await post({ model: 'm', input: script(n), background: true });
          const { id } = (await res.json()) as { id: string };
          for (;;) {
            const r = (await (await fetch(`${base}/responses/${id}`)).json()) as { status: string };
            if (r.status === 'completed') received.set(id, r);
            if (r.status !== 'queued' && r.status !== 'in_progress') return;
            await sleep(30);
          }
        },
        async (n) => {
          const events = await readSse(await post({ model: 'm', input: script(n), background: true, stream: true }));
          const done = events.find((e) => e.type === 'response.completed');
          if (done) received.set(done.response.id, done.response);
        },
      ];
      const clients = modes.map(async (mode) => {
        for (let n = 0; !stop; n++) {
          requests++;
          await mode(n).catch(() => interrupted++); // the kill cuts whatever is in flight
        }
      });
      await sleep(1_200 + Math.floor(Math.random() * 600));
      stop = true; // no new requests: only those in flight are cut
      await kill9();
      await Promise.all(clients);
    }

    // the last restart: its sweep settles what the dead processes left
    const last = await start();
    const base = `${last.url}/v1`;
    const db = new Database(join(dir, 'data', 'switchyard.db'), { readonly: true });
    const open = () => db.prepare("SELECT count(*) FROM responses WHERE status IN ('in_progress', 'queued')").pluck().get() as number;
    const leftOpenAtRestart = open();
    await waitFor(async () => (open() === 0 ? true : undefined), 20_000);
    const byStatus = db.prepare('SELECT status, count(*) AS n FROM responses GROUP BY status').all() as Array<{ status: string; n: number }>;
    db.close();

    let identical = 0;
    for (const [id, response] of received) {
      const stored = await (await fetch(`${base}/responses/${id}`)).json();
      expect(stored).toEqual(response);
      identical++;
    }
    console.log(
      `kill -9 under load: ${KILLS} kills, ${requests} requests (${interrupted} cut by a kill), ${received.size} completed responses received, ` +
        `${identical} retrieved identical; ${leftOpenAtRestart} still open when the last restart was listening, 0 after its sweep; stored by status: ${byStatus.map((r) => `${r.status} ${r.n}`).join(', ')}`,
    );
    expect(received.size).toBeGreaterThan(KILLS * 4);
    expect(identical).toBe(received.size);
  }, 120_000);
});
