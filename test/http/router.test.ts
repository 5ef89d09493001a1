// The route table (src/http/router.ts): a fixed path is found without walking the patterns, and
// the answer is the same as the walk's — table order decides where a pattern also matches.
import { describe, expect, it } from 'vitest';
import { matchRoute, type Route } from '../../src/http/router.js';

const handle = () => undefined;
const route = (method: Route['method'], path: Route['path']): Route => ({ method, path, handle });

describe('matchRoute', () => {
  const compact = route('POST', '/v1/responses/compact');
  const byId = route('GET', /^\/v1\/responses\/([^/]+)$/);
  const cancel = route('POST', /^\/v1\/responses\/([^/]+)\/cancel$/);
  const create = route('POST', '/v1/responses');
  const health = route('GET', '/health');
  const routes = [compact, byId, cancel, create, health];

  it('finds a fixed path by method, and tells a known path under another method from an unknown one', () => {
    expect(matchRoute(routes, 'POST', '/v1/responses')).toEqual({ route: create, params: [] });
    expect(matchRoute(routes, 'GET', '/health')).toEqual({ route: health, params: [] });
    expect(matchRoute(routes, 'DELETE', '/health')).toBe('method_not_allowed');
    expect(matchRoute(routes, 'GET', '/v1/nothing')).toBeUndefined();
  });

  it('a fixed path a pattern also matches keeps the table order: the pattern before it answers other methods', () => {
    // '/v1/responses/compact' also matches the `{id}` pattern: GET is that pattern's, POST the fixed route's
    expect(matchRoute(routes, 'POST', '/v1/responses/compact')).toEqual({ route: compact, params: [] });
    expect(matchRoute(routes, 'GET', '/v1/responses/compact')).toEqual({ route: byId, params: ['compact'] });
    expect(matchRoute(routes, 'DELETE', '/v1/responses/compact')).toBe('method_not_allowed');
  });

  it('patterns still match with their decoded params, and refuse malformed or NUL-bearing ones', () => {
    expect(matchRoute(routes, 'POST', '/v1/responses/resp_1/cancel')).toEqual({ route: cancel, params: ['resp_1'] });
    expect(matchRoute(routes, 'GET', '/v1/responses/a%20b')).toEqual({ route: byId, params: ['a b'] });
    expect(matchRoute(routes, 'GET', '/v1/responses/%E0%A4%A')).toBeUndefined();
    expect(matchRoute(routes, 'GET', '/v1/responses/a%00b')).toBeUndefined();
  });
});
