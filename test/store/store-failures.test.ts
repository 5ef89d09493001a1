import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { estimateTokens } from '../../src/engine/token-count.js';
import { toGatewayError } from '../../src/errors.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { Settlement, SettleOutcome, StoredResponse } from '../../src/store/store.js';
import { readSse } from '../helpers/gateway.js';

/** A store whose writes fail the way a locked SQLite file (or an unreachable database) does. */
class UnwritableStore extends SqliteResponseStore {
  override async save(_record: StoredResponse): Promise<void> {
    throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  }

  override async startRun(record: StoredResponse): Promise<void> {
    await this.save(record);
  }

  override async saveOwned(record: StoredResponse): Promise<boolean> {
    await this.save(record);
    return true;
  }

  override async settle(settlement: Settlement): Promise<SettleOutcome> {
    if (settlement.record) await this.save(settlement.record);
    return 'ok';
  }
}

describe('when the store cannot be written', () => {
  let sim: Simulator;
  let gateway: Gateway;
  let dir: string;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-store-fail-'));
    const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', upstream: { url: sim.url } } as any });
    gateway = await startGateway({ config, logger: pino({ level: 'silent' }), store: new UnwritableStore(join(dir, 'unwritable')) });
  });
  afterAll(async () => {
    await gateway.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a blocking stored response is not reported as stored: 503, retryable', async () => {
    const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi' }) });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-should-retry')).toBe('true');
    expect(((await res.json()) as any).error.code).toBe('store_unavailable');
  });

  it('a streamed stored response ends with one response.failed saying it could not be stored', async () => {
    const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', stream: true }) });
    const events = await readSse(res);
    const terminal = events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete'].includes(e.type));
    expect(terminal.map((e) => e.type)).toEqual(['response.failed']);
    expect(terminal[0].response.error.message).toMatch(/could not be stored/);
    expect(terminal[0].response.completed_at).toBeNull();
  });

  it('store: false is unaffected', async () => {
    const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi', store: false }) });
    expect(res.status).toBe(200);
  });
});

describe('error and estimate edge cases', () => {
  it('database unavailability maps to a retryable 503; other failures to 500', () => {
    for (const err of [Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), Object.assign(new Error('x'), { code: '57P01' }), new Error('Connection terminated unexpectedly')]) {
      expect(toGatewayError(err)).toMatchObject({ status: 503, code: 'store_unavailable', retryable: true });
    }
    expect(toGatewayError(new TypeError('boom'))).toMatchObject({ status: 500, code: 'server_error' });
  });

  it('non-ASCII text counts about one token per character', () => {
    const cjk = estimateTokens([{ type: 'message', role: 'user', content: [{ type: 'text', text: '你好世界你好世界' }] }]);
    const ascii = estimateTokens([{ type: 'message', role: 'user', content: [{ type: 'text', text: 'abcdefgh' }] }]);
    expect(cjk).toBe(4 + 8);
    expect(ascii).toBe(4 + 2);
  });
});
