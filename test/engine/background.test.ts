import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { checkStreamInvariants, validateStreamEvent } from '../helpers/spec.js';

const SLOW = { rounds: [{ text: 'one two three four five six seven eight nine ten', chunks: 10, delay_ms: 60 }] };

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('background runs', () => {
  let tg: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    tg = await startTestGateway({ config: { background: { heartbeatMs: 100, staleAfterMs: 400 } } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('returns queued at once and is polled to completion', async () => {
    const started = Date.now();
    const created = await client.responses.create({ model: 'm', input: scripted(SLOW), background: true });
    expect(Date.now() - started).toBeLessThan(400);
    expect(created.status).toBe('queued');
    expect(created.background).toBe(true);
    const done = await waitFor(async () => {
      const r = await client.responses.retrieve(created.id);
      return r.status === 'completed' ? r : undefined;
    });
    expect(done.output_text).toBe('one two three four five six seven eight nine ten');
  });

  it('an upstream refusal before the first event still settles the run: failed, with a terminal event', async () => {
    const created = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ status: 400, error: 'context too long' }] }), background: true });
    const failed = await waitFor(async () => {
      const r = await client.responses.retrieve(created.id);
      return r.status === 'failed' ? r : undefined;
    });
    expect(failed.error?.message).toMatch(/context too long/);
    const events = await readSse(await fetch(`${tg.baseURL}/responses/${created.id}?stream=true`));
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.queued', 'response.in_progress', 'response.failed']);

    // streamed from the start, the same run ends with its events rather than an empty body
    const live = await readSse(
      await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted({ rounds: [{ status: 400, error: 'nope' }] }), background: true, stream: true }) }),
    );
    expect(live.at(-1)!.type).toBe('response.failed');
  });

  it('requires store: true', async () => {
    await expect(client.responses.create({ model: 'm', input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400, param: 'background' });
  });

  it('resumes the stream from starting_after mid-run with no event lost or repeated', async () => {
    const created = await client.responses.create({ model: 'm', input: scripted(SLOW), background: true });
    // read the first few events, then drop the connection
    const first = await fetch(`${tg.baseURL}/responses/${created.id}?stream=true`);
    const reader = first.body!.getReader();
    let text = '';
    while ((text.match(/\n\n/g) ?? []).length < 6) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const firstEvents = text.split('\n\n').filter((b) => b.includes('data: ')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)));
    const lastSeen = firstEvents.at(-1)!.sequence_number;
    expect(firstEvents.map((e) => e.type).slice(0, 3)).toEqual(['response.created', 'response.queued', 'response.in_progress']);

    const rest = await readSse(await fetch(`${tg.baseURL}/responses/${created.id}?stream=true&starting_after=${lastSeen}`));
    expect(rest[0].sequence_number).toBe(lastSeen + 1);
    const all = [...firstEvents, ...rest];
    all.forEach((e, i) => expect(e.sequence_number).toBe(i));
    expect(checkStreamInvariants(all as any)).toEqual([]);
    expect(all.at(-1)!.type).toBe('response.completed');

    // after the run, the whole stream replays from the log
    const replay = await readSse(await fetch(`${tg.baseURL}/responses/${created.id}?stream=true&starting_after=-1`));
    expect(replay.map((e) => e.sequence_number)).toEqual(all.map((e) => e.sequence_number));
  });

  it('resumes through the SDK (retrieve with stream and starting_after)', async () => {
    const created = await client.responses.create({ model: 'm', input: scripted(SLOW), background: true });
    const stream = await client.responses.retrieve(created.id, { stream: true, starting_after: 2 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).not.toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('streams a background response as it runs when created with stream: true', async () => {
    const events = await readSse(
      await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted(SLOW), background: true, stream: true }) }),
    );
    expect(events[0].response.status).toBe('queued');
    expect(events.at(-1)!.type).toBe('response.completed');
    for (const event of events) expect(validateStreamEvent(event)).toEqual([]);
    expect(checkStreamInvariants(events as any)).toEqual([]);
  });

  it('cancels mid-run: the upstream request is aborted and the status is cancelled', async () => {
    const hang = { rounds: [{ text: 'a b c d e f', hang_after_chunks: 3 }] };
    const created = await client.responses.create({ model: 'm', input: scripted(hang), background: true });
    await waitFor(async () => ((await client.responses.retrieve(created.id)).status === 'in_progress' ? true : undefined));
    const aborted = tg.simulator.waitForAbort(3_000);
    const cancelled = await client.responses.cancel(created.id);
    expect(cancelled.status).toBe('cancelled');
    await aborted;
    expect((await client.responses.retrieve(created.id)).status).toBe('cancelled');
    const events = await readSse(await fetch(`${tg.baseURL}/responses/${created.id}?stream=true`));
    expect(events.at(-1)!.response.status).toBe('cancelled');
  });

  it('cancelling a response that was not run in the background is a 400', async () => {
    const sync = await client.responses.create({ model: 'm', input: 'hi' });
    await expect(client.responses.cancel(sync.id)).rejects.toMatchObject({ status: 400 });
    await expect(client.responses.cancel('resp_missing')).rejects.toMatchObject({ status: 404 });
  });

  it('a graceful restart during a run leaves it failed with a clear error, never stuck in_progress', async () => {
    const hang = { rounds: [{ text: 'x y z', hang_after_chunks: 2 }] };
    const created = await client.responses.create({ model: 'm', input: scripted(hang), background: true });
    await waitFor(async () => ((await client.responses.retrieve(created.id)).status === 'in_progress' ? true : undefined));
    await tg.restart();
    const after = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
    const failed = await waitFor(async () => {
      const r = await after.responses.retrieve(created.id);
      return r.status === 'failed' ? r : undefined;
    });
    expect(failed.error?.message).toMatch(/shut down before this response finished/);
    const events = await readSse(await fetch(`${tg.baseURL}/responses/${created.id}?stream=true`));
    expect(events.at(-1)!.type).toBe('response.failed');
  });
});

describe('background runs across a gateway crash (separate process, SIGKILL)', () => {
  it('the next gateway on the same data folder fails the orphaned run', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { startSimulator } = await import('../../src/simulate/server.js');
    const sim = await startSimulator({ port: 0 });
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-crash-'));
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ background: { heartbeatMs: 100, staleAfterMs: 500 }, logLevel: 'silent' }));
    const cli = new URL('../../dist/cli.js', import.meta.url).pathname;
    const startChild = async () => {
      const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--upstream', sim.url, '--data-dir', join(dir, 'data'), '--config', configFile], {
        env: { ...process.env, SWITCHYARD_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (chunk) => {
          out += chunk;
          const match = /"url":"(http:\/\/[^"]+)"/.exec(out);
          if (match) resolve(match[1]);
        });
        child.once('exit', () => reject(new Error(`gateway exited early: ${out}`)));
      });
      return { child, url };
    };
    const first = await startChild();
    try {
      const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: 'test', maxRetries: 0 });
      const created = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'x y z', hang_after_chunks: 2 }] }), background: true });
      await waitFor(async () => ((await client.responses.retrieve(created.id)).status === 'in_progress' ? true : undefined));
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));

      const second = await startChild();
      try {
        const after = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: 'test', maxRetries: 0 });
        const failed = await waitFor(async () => {
          const r = await after.responses.retrieve(created.id);
          return r.status === 'failed' ? r : undefined;
        });
        expect(failed.error?.message).toMatch(/stopped before it finished/);
        const events = await readSse(await fetch(`${second.url}/v1/responses/${created.id}?stream=true`));
        expect(events.at(-1)!.type).toBe('response.failed');
        events.forEach((e, i) => expect(e.sequence_number).toBe(i));
      } finally {
        second.child.kill('SIGKILL');
      }
    } finally {
      first.child.kill('SIGKILL');
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
