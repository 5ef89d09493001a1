// clientForPool (src/util/undici-clients.ts) drops an aborted request before undici resumes,
// but never while undici's own resume loop runs: undici calls kResume again from inside it (after
// writing a body) with the request being written still at the pending index. A request aborted
// there (a handler whose onRequestSent throws: undici's Request aborts it) must be left to that
// loop, or the pending index moves past the end of the queue (pending −1; a later destroy() throws
// on undici's assert(kPending === 0)). The gateway's own handlers have no onRequestSent; the
// client must be right for any handler. (Found by a second review.)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, Dispatcher } from 'undici';
import undiciSymbols from 'undici/lib/core/symbols.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientForPool } from '../../src/util/undici-clients.js';

const { kQueue, kPendingIdx } = undiciSymbols;

describe('clientForPool: a request aborted while undici writes it', () => {
  let server: http.Server;
  let origin = '';

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps the pending index within the queue', async () => {
    const client = clientForPool(new URL(origin), { pipelining: 1 }) as Client;
    const internals = client as unknown as Record<symbol, unknown>;
    const seen = new Promise<{ pending: number; length: number }>((resolve) => {
      client.dispatch({ path: '/', method: 'POST', body: 'x' }, {
        onConnect() {},
        onRequestSent() {
          throw new Error('handler failed');
        },
        onHeaders: () => true,
        onData: () => true,
        onComplete() {},
        // undici is still inside _resume here: look once writeH1 has returned
        onError: () => queueMicrotask(() => resolve({ pending: internals[kPendingIdx] as number, length: (internals[kQueue] as unknown[]).length })),
      } as unknown as Dispatcher.DispatchHandler);
    });
    const { pending, length } = await seen;
    // let the aborted socket close (undici resets kPendingIdx then) before cleaning up
    await sleep(200);
    await client.close();
    expect(pending).toBeLessThanOrEqual(length);
  });
});
