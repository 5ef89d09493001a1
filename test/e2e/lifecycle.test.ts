import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { readSse, scripted } from '../helpers/gateway.js';
import { PG_URL, probePostgres, REQUIRE_PG } from '../helpers/postgres.js';

const pgSkip = await probePostgres(PG_URL);
if (pgSkip && REQUIRE_PG) throw new Error(pgSkip);
const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'cli.js');

let sim: Simulator;
let dir: string;
beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'switchyard-lifecycle-'));
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts a gateway child; resolves with its URL and pid once it logs that it listens. */
function spawnGateway(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; pid: number; logs: string[] }> {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${logs.join('')}`)), 30_000);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        logs.push(line);
        if (line.includes('switchyard listening')) {
          clearTimeout(timer);
          const parsed = JSON.parse(line) as { url: string; pid: number };
          resolve({ child, url: parsed.url, pid: parsed.pid, logs });
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${logs.join('')}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('graceful shutdown (separate process)', () => {
  it('SIGTERM: a short turn drains, a long stream gets one stored response.failed, the process exits within the grace', async () => {
    const dataDir = join(dir, 'sigterm');
    const graceMs = 1_500;
    const { child, url, logs } = await spawnGateway(process.execPath, [CLI, 'serve', '--port', '0', '--upstream', sim.url, '--data-dir', dataDir], { SWITCHYARD_SHUTDOWN_GRACE_MS: String(graceMs), SWITCHYARD_LOG_LEVEL: 'info' });
    const post = (input: string) => fetch(`${url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input, stream: true }) });
    const long = await post(scripted({ rounds: [{ text: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '), delay_ms: 250 }] }));
    const short = await post(scripted({ rounds: [{ text: 'quick answer', delay_ms: 300 }] }));
    expect(long.status).toBe(200);
    const longEvents = readSse(long);
    const shortEvents = readSse(short);
    await new Promise((r) => setTimeout(r, 300));
    const signalled = Date.now();
    child.kill('SIGTERM');
    const code = await exited(child);
    const tookMs = Date.now() - signalled;
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(graceMs + 5_000);

    const events = await longEvents;
    const terminals = events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete'].includes(e.type));
    expect(terminals).toHaveLength(1);
    expect(events.at(-1)!.type).toBe('response.failed');
    expect(events.at(-1)!.response.error.code).toBe('server_shutting_down');
    expect((await shortEvents).at(-1)!.type).toBe('response.completed');
    const summary = logs.map((l) => { try { return JSON.parse(l); } catch { return {}; } }).find((l) => l.msg === 'shutdown: running turns drained or cut');
    expect(summary).toMatchObject({ drained: 1, cut: 1 });

    // the cut response was stored as failed: a new gateway on the same data folder serves it
    const id = events[0].response.id as string;
    const again = await startGateway({ config: loadConfig({ env: {}, overrides: { port: 0, dataDir, logLevel: 'silent', upstream: { url: sim.url } } }), logger: pino({ level: 'silent' }) });
    try {
      const stored = (await (await fetch(`${again.url}/v1/responses/${id}`)).json()) as { status: string; error: { code: string } };
      expect(stored.status).toBe('failed');
      expect(stored.error.code).toBe('server_shutting_down');
    } finally {
      await again.close();
    }
  }, 60_000);

  it('npm start execs node: SIGTERM to npm stops the server, no orphan left', async () => {
    const { child, pid } = await spawnGateway('npm', ['start', '--silent', '--', '--port', '0', '--upstream', sim.url, '--data-dir', join(dir, 'npm-start')], { SWITCHYARD_SHUTDOWN_GRACE_MS: '500' });
    expect(pid).not.toBe(child.pid);
    expect(alive(pid)).toBe(true);
    child.kill('SIGTERM');
    await exited(child);
    const deadline = Date.now() + 10_000;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(alive(pid)).toBe(false);
  }, 60_000);
});

describe('GET /health and /ready', () => {
  it('/ready is 503 with the reason when no upstream answers', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const gateway = await startGateway({ config: loadConfig({ env: {}, overrides: { port: 0, dataDir: join(dir, 'dead-upstream'), logLevel: 'silent', upstream: { url: `http://127.0.0.1:${port}/v1`, maxRetries: 0 } } }), logger: pino({ level: 'silent' }) });
    try {
      expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
      const ready = await fetch(`${gateway.url}/ready`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reason: string }).reason).toMatch(/no upstream reachable/);
    } finally {
      await gateway.close();
    }
  });

  it.skipIf(pgSkip !== undefined)(`/ready turns 503 when the PostgreSQL database goes away${pgSkip ? ` (skipped: ${pgSkip})` : ''}`, async () => {
    const database = `switchyard_ops_ready_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${database}`);
      const url = new URL(PG_URL);
      url.pathname = `/${database}`;
      const gateway = await startGateway({ config: loadConfig({ env: {}, overrides: { port: 0, dataDir: join(dir, 'pg'), logLevel: 'silent', upstream: { url: sim.url }, store: { url: url.toString() } } }), logger: pino({ level: 'silent' }) });
      try {
        expect((await fetch(`${gateway.url}/ready`)).status).toBe(200);
        // the database disappears under the running gateway (its connections terminated)
        await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
        const ready = await fetch(`${gateway.url}/ready`);
        expect(ready.status).toBe(503);
        expect(((await ready.json()) as { reason: string }).reason).toMatch(/^store unreachable/);
        expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
      } finally {
        await gateway.close();
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
  }, 60_000);
});
