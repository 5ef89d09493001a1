// The dispatcher on its own, in process (test/helpers/in-process.ts): no gateway, no socket — the
// core and ops routes, the errors before a route (unknown URL, wrong method, shutting down), a
// route's own failure, and the Messages surface's error shape.
import { describe, expect, it, vi } from 'vitest';
import { invalidRequest } from '../../src/errors.js';
import { createDispatch, type DispatchDeps } from '../../src/http/dispatch.js';
import { sendJson } from '../../src/http/json.js';
import { opsRoutes, type Readiness } from '../../src/http/ops-routes.js';
import type { Route } from '../../src/http/router.js';
import { GatewayMetrics } from '../../src/observability/metrics.js';
import { inProcessFetch } from '../helpers/in-process.js';

/** Only what the tested routes touch: the Responses routes' engine and store are never reached here. */
function deps(overrides: Partial<DispatchDeps> = {}): DispatchDeps {
  return {
    engine: undefined as never,
    store: undefined as never,
    background: undefined as never,
    maxBodyBytes: 1024,
    log: { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as never,
    health: () => ({ status: 'ok', upstream: 'simulated' }),
    listModels: async () => ({ object: 'list', data: [{ id: 'm', object: 'model' }] }),
    ...overrides,
  };
}

async function errorOf(res: Response): Promise<Record<string, unknown>> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  return body.error;
}

describe('dispatch, in process', () => {
  it('answers GET /health and GET /v1/models', async () => {
    const fetch = inProcessFetch(createDispatch(deps()));
    const health = await fetch('/health');
    expect(health.status).toBe(200);
    expect(health.headers.get('content-length')).toBe(String(JSON.stringify({ status: 'ok', upstream: 'simulated' }).length));
    expect(await health.json()).toEqual({ status: 'ok', upstream: 'simulated' });
    expect(await (await fetch('/v1/models')).json()).toEqual({ object: 'list', data: [{ id: 'm', object: 'model' }] });
  });

  it('an unknown URL is a 404 and a known path under another method a 405, in the OpenAI error shape', async () => {
    const fetch = inProcessFetch(createDispatch(deps()));
    const unknown = await fetch('/v1/nothing/here?x=1');
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({ type: 'invalid_request_error', code: 'unknown_url', message: 'Unknown request URL: GET /v1/nothing/here.' });
    const wrongMethod = await fetch('/health', { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(await errorOf(wrongMethod)).toMatchObject({ code: 'method_not_allowed', message: 'Method DELETE is not allowed on /health.' });
  });

  it('while shutting down every request is a 503 that closes its connection', async () => {
    const fetch = inProcessFetch(createDispatch(deps({ isClosing: () => true })));
    const res = await fetch('/health');
    expect(res.status).toBe(503);
    expect(await errorOf(res)).toMatchObject({ code: 'server_shutting_down' });
  });

  it("passes path params and the query to the route; a route's GatewayError is its status, any other failure a logged 500", async () => {
    const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() };
    const routes: Route[] = [
      { method: 'GET', path: /^\/v1\/echo\/([^/]+)$/, handle: (_req, res, [id], query) => sendJson(res, 200, { id, limit: query.get('limit') }) },
      { method: 'POST', path: '/v1/refuse', handle: () => Promise.reject(invalidRequest('No.', 'field', 'invalid_value')) },
      { method: 'POST', path: '/v1/break', handle: () => Promise.reject(new Error('a bug')) },
    ];
    const fetch = inProcessFetch(createDispatch(deps({ routes, log: log as never })));
    expect(await (await fetch('/v1/echo/a%2Fb?limit=3')).json()).toEqual({ id: 'a/b', limit: '3' });
    const refused = await fetch('/v1/refuse', { method: 'POST' });
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toMatchObject({ param: 'field', code: 'invalid_value' });
    expect(log.error).not.toHaveBeenCalled();
    const broken = await fetch('/v1/break', { method: 'POST' });
    expect(broken.status).toBe(500);
    expect(broken.headers.get('x-should-retry')).not.toBeNull();
    expect(await errorOf(broken)).toMatchObject({ type: 'server_error' });
    expect(log.error).toHaveBeenCalledTimes(1);
  });

  it('an error under /v1/messages is in the Anthropic shape', async () => {
    const fetch = inProcessFetch(createDispatch(deps()));
    const res = await fetch('/v1/messages/nothing', { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    const body = (await res.json()) as Record<string, any>;
    expect(body).toMatchObject({ type: 'error', error: { type: 'not_found_error' }, request_id: expect.stringMatching(/^req_/) });
    expect(res.headers.get('request-id')).toBe(body.request_id);
  });
});

describe('ops routes, in process', () => {
  it('GET /ready is 200 when ready and 503 with the reason when not', async () => {
    let readiness: Readiness = { ok: true };
    const fetch = inProcessFetch(createDispatch(deps({ routes: opsRoutes({ ready: async () => readiness }) })));
    const ready = await fetch('/ready');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    readiness = { ok: false, reason: 'store unreachable: no answer' };
    const notReady = await fetch('/ready');
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not_ready', reason: 'store unreachable: no answer' });
  });

  it('GET /metrics is Prometheus text when metrics are on, and no route when they are off', async () => {
    const on = inProcessFetch(createDispatch(deps({ routes: opsRoutes({ ready: async () => ({ ok: true }), metrics: new GatewayMetrics() }) })));
    const metrics = await on('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toContain('switchyard_background_runs');
    const off = inProcessFetch(createDispatch(deps({ routes: opsRoutes({ ready: async () => ({ ok: true }) }) })));
    expect((await off('/metrics')).status).toBe(404);
  });
});
