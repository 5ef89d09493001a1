import { Counter, Gauge, Registry } from 'prom-client';
import type { ResponseObject } from '../protocol/responses.js';
import { RecordedCounter, RecordedHistogram } from './recorded-metrics.js';

/** Request latency buckets (seconds): sub-millisecond gateway answers up to long agent turns. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const ROUND_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50];
/** Client-chosen label values (MCP server labels, tool types) are capped: past this, `other`. */
const MAX_LABEL_VALUES = 100;

type CounterChild = { inc(by?: number): void };
type HistogramChild = { observe(value: number): void };
type LabelledMetric = Counter<string> | RecordedCounter | RecordedHistogram;

/** The per-route children, bound once: the hot path only increments. */
export interface RouteMetrics {
  duration: HistogramChild;
  ttfb: HistogramChild;
  byStatus: Map<number, CounterChild>;
  route: string;
  method: string;
}

/**
 * The gateway's Prometheus metrics on a registry of its own (several gateways can share one
 * process, as in tests). Label children are created once per label set and cached, so recording
 * allocates nothing after warm-up.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  // recorded on every request, round, response and tool call: recorded-metrics.ts (the same exposition, without prom-client's work per call)
  private readonly httpRequests = new RecordedCounter('switchyard_http_requests_total', 'HTTP requests by route, method and status', ['route', 'method', 'status'], this.registry);
  private readonly httpDuration = new RecordedHistogram('switchyard_http_request_duration_seconds', 'Time from request to the end of the response', LATENCY_BUCKETS, ['route', 'method'], this.registry);
  private readonly httpTtfb = new RecordedHistogram('switchyard_http_time_to_first_byte_seconds', 'Time from request to the response headers (for streams: the stream start)', LATENCY_BUCKETS, ['route', 'method'], this.registry);
  private readonly roundUpstream = new RecordedHistogram('switchyard_round_upstream_seconds', 'Per inference round: from sending to the upstream to the end of its stream', LATENCY_BUCKETS, [], this.registry);
  private readonly roundGateway = new RecordedHistogram('switchyard_round_gateway_seconds', 'Per inference round: time after the upstream stream (gateway tool calls, storage)', LATENCY_BUCKETS, [], this.registry);
  private readonly rounds = new RecordedHistogram('switchyard_rounds_per_response', 'Inference rounds per response', ROUND_BUCKETS, [], this.registry);
  private readonly responses = new RecordedCounter('switchyard_responses_total', 'Responses settled, by status', ['status'], this.registry);
  private readonly toolCalls = new RecordedCounter('switchyard_tool_calls_total', 'Tool calls by public type, owner (gateway | client) and outcome', ['type', 'owner', 'outcome'], this.registry);
  private readonly toolDuration = new RecordedHistogram('switchyard_tool_call_duration_seconds', 'Gateway-owned tool call duration by tool type', LATENCY_BUCKETS, ['type'], this.registry);
  private readonly incomplete = new Counter({ name: 'switchyard_responses_incomplete_total', help: 'Incomplete responses by reason', labelNames: ['reason'], registers: [this.registry] });
  private readonly mcpFailures = new Counter({ name: 'switchyard_mcp_failures_total', help: 'MCP tools/list and tools/call failures by server label', labelNames: ['server', 'operation'], registers: [this.registry] });
  private readonly storeErrors = new Counter({ name: 'switchyard_store_errors_total', help: 'Store operations that failed', labelNames: ['operation'], registers: [this.registry] });
  private readonly failovers = new Counter({ name: 'switchyard_upstream_failovers_total', help: 'Requests moved to the next candidate upstream, by the upstream that failed', labelNames: ['upstream'], registers: [this.registry] });
  readonly openStreams = new Gauge({ name: 'switchyard_open_streams', help: 'Event streams (SSE) open now', registers: [this.registry] });
  private readonly routeCache = new Map<string, RouteMetrics>();
  /** Label children by metric, then by their label values. */
  private readonly children = new Map<LabelledMetric, Map<string, CounterChild | HistogramChild>>();
  private childCount = 0;

  constructor(sources: { backgroundRuns?: () => number } = {}) {
    const backgroundRuns = sources.backgroundRuns;
    new Gauge({
      name: 'switchyard_background_runs',
      help: 'Background runs executing in this gateway (its queue depth)',
      registers: [this.registry],
      collect() {
        // read at scrape time: nothing on the hot path
        this.set(backgroundRuns?.() ?? 0);
      },
    });
  }

  /** The children for one route and method (cached; the route label is a pattern, never a raw path). */
  route(route: string, method: string): RouteMetrics {
    const key = `${method} ${route}`;
    let metrics = this.routeCache.get(key);
    if (!metrics) {
      metrics = { route, method, duration: this.httpDuration.labels(route, method), ttfb: this.httpTtfb.labels(route, method), byStatus: new Map() };
      this.routeCache.set(key, metrics);
    }
    return metrics;
  }

  /** One finished request: seconds since start, and to the first byte (0 = headers never sent). */
  request(metrics: RouteMetrics, status: number, seconds: number, ttfbSeconds: number): void {
    let counter = metrics.byStatus.get(status);
    if (!counter) {
      counter = this.httpRequests.labels(metrics.route, metrics.method, String(status));
      metrics.byStatus.set(status, counter);
    }
    counter.inc();
    metrics.duration.observe(seconds);
    if (ttfbSeconds > 0) metrics.ttfb.observe(ttfbSeconds);
  }

  round(upstreamSeconds: number, gatewaySeconds: number): void {
    this.roundUpstream.observe(upstreamSeconds);
    this.roundGateway.observe(gatewaySeconds);
  }

  /** A settled response: its status, rounds, incomplete reason, and the tool calls in its output. */
  settled(response: ResponseObject, roundsRun: number): void {
    (this.child(this.responses, response.status) as CounterChild).inc();
    if (roundsRun > 0) this.rounds.observe(roundsRun);
    if (response.status === 'incomplete') (this.child(this.incomplete, response.incomplete_details?.reason ?? 'unknown') as CounterChild).inc();
    for (const item of response.output as unknown as Array<Record<string, unknown>>) {
      const call = classifyCall(item);
      if (call) (this.child(this.toolCalls, call.type, call.owner, call.outcome) as CounterChild).inc();
    }
  }

  /** A gateway-owned call finished (by the scheduler's clock). */
  toolCall(type: string, seconds: number): void {
    (this.child(this.toolDuration, type) as HistogramChild).observe(seconds);
  }

  mcpFailure(operation: 'list' | 'call', server: string): void {
    (this.child(this.mcpFailures, server, operation) as CounterChild).inc();
  }

  storeError(operation: string): void {
    (this.child(this.storeErrors, operation) as CounterChild).inc();
  }

  failover(upstream: string): void {
    (this.child(this.failovers, upstream) as CounterChild).inc();
  }

  /** Prometheus text exposition. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private child(metric: LabelledMetric, ...values: string[]): CounterChild | HistogramChild {
    let byValues = this.children.get(metric);
    if (!byValues) this.children.set(metric, (byValues = new Map()));
    // one label (a response's status, a tool type): its value is the key, no key string per call
    const key = values.length === 1 ? values[0] : values.join('\u0000');
    let child = byValues.get(key);
    if (!child) {
      // past the cap a new label set counts as `other`, and is not cached itself: the cache stays bounded
      if (this.childCount >= MAX_LABEL_VALUES * 20) {
        const other = values.map(() => 'other');
        const otherKey = other.join('\u0000');
        child = byValues.get(otherKey);
        if (!child) byValues.set(otherKey, (child = metric.labels(...other)));
        return child;
      }
      child = metric.labels(...values);
      byValues.set(key, child);
      this.childCount++;
    }
    return child;
  }
}

/** A tool call in a response's output: its public type, who ran it, and how it ended. */
function classifyCall(item: Record<string, unknown>): { type: string; owner: 'client' | 'gateway'; outcome: string } | undefined {
  const type = item.type;
  if (typeof type !== 'string') return undefined;
  if (type === 'function_call' || type === 'custom_tool_call') return { type, owner: 'client', outcome: 'returned' };
  if (type === 'mcp_approval_request') return { type: 'mcp', owner: 'gateway', outcome: 'approval_requested' };
  if (!type.endsWith('_call')) return undefined;
  if (item.execution === 'client') return { type, owner: 'client', outcome: 'returned' };
  const failed = (item.error !== undefined && item.error !== null) || item.status === 'failed';
  return { type, owner: 'gateway', outcome: failed ? 'error' : item.status === 'incomplete' ? 'incomplete' : 'ok' };
}
