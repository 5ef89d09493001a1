import { performance } from 'node:perf_hooks';
import type { Logger } from '../util/logger.js';
import { requestIdFor, type GatewayRequest, type GatewayResponse } from './request-context.js';
import type { GatewayMetrics } from './metrics.js';

/**
 * Per request: the request id (`x-request-id`, the client's own when sane), then at the end one
 * access-log line and the request metrics. Never logs keys, headers or bodies.
 */
export class RequestObserver {
  constructor(
    private readonly log: Logger & { info(obj: object, msg?: string): void },
    private readonly metrics: GatewayMetrics | undefined,
    private readonly accessLog: boolean,
  ) {}

  begin(req: GatewayRequest, res: GatewayResponse): void {
    req.startedAt = performance.now();
    // sent as `x-request-id` with the response's head (GatewayResponse.writeHead)
    req.requestId = requestIdFor(req.headers['x-request-id']);
    if (this.metrics) res.streamGauge = this.metrics.openStreams;
    res.once('close', () => this.end(req, res));
  }

  private end(req: GatewayRequest, res: GatewayResponse): void {
    const now = performance.now();
    const seconds = (now - req.startedAt) / 1000;
    // a connection cut before any answer: no status was sent (499, nginx's "client closed request")
    const status = res.headersSent ? res.statusCode : 499;
    if (res.isEventStream) this.metrics?.openStreams.dec();
    if (this.metrics) this.metrics.request(this.metrics.route(req.routeLabel, req.method ?? 'GET'), status, seconds, res.firstByteAt > 0 ? (res.firstByteAt - req.startedAt) / 1000 : 0);
    if (this.accessLog) {
      this.log.info(
        { reqId: req.requestId, method: req.method, route: req.routeLabel, status, durationMs: Math.round((now - req.startedAt) * 10) / 10, model: req.model, tenant: req.tenant },
        'request',
      );
    }
  }
}
