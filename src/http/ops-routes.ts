import type { GatewayMetrics } from '../observability/metrics.js';
import { sendJson } from './json.js';
import type { Route } from './router.js';

export interface Readiness {
  ok: boolean;
  /** Why not, for the operator (and the load balancer's logs). */
  reason?: string;
}

/**
 * The operator's endpoints: `GET /ready` (the store answers and some upstream answered recently;
 * `503` with the reason otherwise) and `GET /metrics` (Prometheus text) when metrics are on.
 * `GET /health` (alive) stays with the core routes.
 */
export function opsRoutes(deps: { ready: () => Promise<Readiness>; metrics?: GatewayMetrics }): Route[] {
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/ready',
      handle: async (_req, res) => {
        const readiness = await deps.ready();
        sendJson(res, readiness.ok ? 200 : 503, readiness.ok ? { status: 'ready' } : { status: 'not_ready', reason: readiness.reason });
      },
    },
  ];
  const metrics = deps.metrics;
  if (metrics) {
    routes.push({
      method: 'GET',
      path: '/metrics',
      handle: async (_req, res) => {
        const { contentType, body } = await metrics.scrape();
        res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
    });
  }
  return routes;
}
