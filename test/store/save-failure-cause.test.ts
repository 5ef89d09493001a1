// A save that fails for a reason other than the database (a value that cannot be serialized, a
// bug) is not a store outage (issue 9, defect 14): the client must not be told to retry a request
// that would fail the same way — after the upstream was already called.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { Settlement, SettleOutcome, StoredResponse } from '../../src/store/store.js';

/** A store whose writes fail the way JSON.stringify does on a value nested too deep. */
class UnserializableStore extends SqliteResponseStore {
  override async save(_record: StoredResponse): Promise<void> {
    throw new RangeError('Maximum call stack size exceeded');
  }
  override async startRun(_record: StoredResponse, _owner: string): Promise<void> {
    throw new RangeError('Maximum call stack size exceeded');
  }
  override async saveOwned(_record: StoredResponse, _owner: string): Promise<boolean> {
    throw new RangeError('Maximum call stack size exceeded');
  }
  override async settle(_settlement: Settlement): Promise<SettleOutcome> {
    throw new RangeError('Maximum call stack size exceeded');
  }
}

describe('a save failing for a reason other than the database', () => {
  let sim: Simulator;
  let gateway: Gateway;
  let dir: string;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-save-cause-'));
    const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir: dir, upstream: { url: sim.url } } });
    gateway = await startGateway({ config, logger: pino({ level: 'silent' }), store: new UnserializableStore(join(dir, 'unserializable')) });
  });
  afterAll(async () => {
    await gateway.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a 500 the client is told not to retry, not a 503 store_unavailable', async () => {
    const res = await fetch(`${gateway.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'hi' }) });
    const body = (await res.json()) as { error: { code: string; type: string } };
    expect(res.status).toBe(500);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(body.error.code).toBe('server_error');
    expect(body.error.code).not.toBe('store_unavailable');
  });
});
