import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PG_URL, probePostgres, REQUIRE_PG } from '../helpers/postgres.js';

const unavailable = await probePostgres(PG_URL);
if (unavailable && REQUIRE_PG) throw new Error(`SWITCHYARD_REQUIRE_POSTGRES=1 but ${unavailable}`);
if (unavailable) console.warn(`replicas: ${unavailable}; the two-replica tests are skipped`);

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 8_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Two gateway replicas on one PostgreSQL schema, in front of one simulator. */
describe.skipIf(unavailable !== undefined)('two gateway replicas on one PostgreSQL database', () => {
  const schema = `switchyard_replicas_${randomBytes(5).toString('hex')}`;
  let sim: Simulator;
  let a: TestGateway;
  let b: TestGateway;
  let clientA: OpenAI;
  let clientB: OpenAI;

  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    const config = { store: { kind: 'postgres', url: PG_URL, schema }, background: { heartbeatMs: 100, staleAfterMs: 10_000 } } as any; // generous: a loaded CI machine must not make a live run look stale
    a = await startTestGateway({ simulator: sim, config });
    b = await startTestGateway({ simulator: sim, config });
    clientA = new OpenAI({ baseURL: a.baseURL, apiKey: 'test', maxRetries: 0 });
    clientB = new OpenAI({ baseURL: b.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await sim?.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it('a response created on one replica is retrieved and continued on the other', async () => {
    const first = await clientA.responses.create({ model: 'm', input: 'remember the word cobalt' });
    expect((await clientB.responses.retrieve(first.id)).output_text).toBe('You said: remember the word cobalt');
    await clientB.responses.create({ model: 'm', previous_response_id: first.id, input: 'what was it?' });
    const messages = sim.requests.at(-1)!.body.messages.map((m: any) => m.content);
    expect(messages).toEqual(['remember the word cobalt', 'You said: remember the word cobalt', 'what was it?']);
  });

  it('a background run on one replica is resumed from and cancelled through the other', async () => {
    const created = await clientA.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'a b c d e f', hang_after_chunks: 3 }] }), background: true });
    await waitFor(async () => ((await clientB.responses.retrieve(created.id)).status === 'in_progress' ? true : undefined));

    // B follows the stream from the shared event log while A runs it
    const following = fetch(`${b.baseURL}/responses/${created.id}?stream=true&starting_after=0`).then(readSse);
    const aborted = sim.waitForAbort(8_000);
    const cancelled = await clientB.responses.cancel(created.id);
    expect(cancelled.status).toBe('cancelled');
    await aborted;
    const events = await following;
    expect(events[0].sequence_number).toBe(1);
    events.forEach((e, i) => expect(e.sequence_number).toBe(i + 1));
    expect(events.at(-1)!.response.status).toBe('cancelled');
    expect((await clientA.responses.retrieve(created.id)).status).toBe('cancelled');
  });

  it('conversations are shared', async () => {
    const conversation = await clientA.conversations.create({});
    await clientB.responses.create({ model: 'm', conversation: conversation.id, input: 'hello from B' });
    const items: any[] = [];
    for await (const item of clientA.conversations.items.list(conversation.id, { order: 'asc' })) items.push(item);
    expect(items.map((i) => i.role)).toEqual(['user', 'assistant']);
  });
});
