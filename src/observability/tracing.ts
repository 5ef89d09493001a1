import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, SimpleSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import type { GatewayRequest, GatewayResponse } from './request-context.js';

interface FinishedTool {
  type: string;
  startedAt: number;
  endedAt: number;
  outcome: string;
}

/** What one request has traced so far: its span, and tool calls waiting for their round's span. */
interface RequestTrace {
  span: Span;
  tools: FinishedTool[];
}

/** `performance.now()` → epoch milliseconds, as OpenTelemetry takes times. */
const epoch = (perfMs: number) => performance.timeOrigin + perfMs;

/**
 * OpenTelemetry traces, only when an OTLP endpoint is configured (nothing is created otherwise):
 * request → round → upstream call, and round → tool call. Round and upstream spans are recorded
 * when the round ends, from the times the turn loop measured, so the engine keeps no span state;
 * tool calls that finish during a round wait in the request's trace for its round span.
 */
export class Tracing {
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;
  private readonly current = new AsyncLocalStorage<RequestTrace>();

  constructor(options: { endpoint?: string; exporter?: SpanExporter; serviceName: string }) {
    const processor = options.exporter ? new SimpleSpanProcessor({ exporter: options.exporter }) : new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: options.endpoint }) });
    this.provider = new TracerProvider({ spanProcessors: [processor] });
    this.tracer = this.provider.getTracer(options.serviceName);
  }

  /** Runs a request's handling inside its span (ended when the response closes). */
  run(req: GatewayRequest, res: GatewayResponse, handle: () => void): void {
    const span = this.tracer.startSpan('http.request', { startTime: epoch(req.startedAt || performance.now()), attributes: { 'http.request.method': req.method ?? 'GET' } }, ROOT_CONTEXT);
    res.once('close', () => {
      const status = res.headersSent ? res.statusCode : 499;
      span.updateName(`${req.method} ${req.routeLabel}`);
      span.setAttributes({ 'http.route': req.routeLabel, 'http.response.status_code': status, 'switchyard.request_id': req.requestId, 'switchyard.model': req.model });
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    this.current.run({ span, tools: [] }, handle);
  }

  /** A gateway tool call finished (times from `performance.now()`). */
  tool(type: string, startedAt: number, endedAt: number, outcome: string): void {
    this.current.getStore()?.tools.push({ type, startedAt, endedAt, outcome });
  }

  /** A round ended now: its span, its upstream call and the tool calls it ran. */
  round(upstreamSeconds: number, gatewaySeconds: number): void {
    const request = this.current.getStore();
    if (!request) return;
    const end = performance.now();
    const upstreamEnd = end - gatewaySeconds * 1000;
    const start = upstreamEnd - upstreamSeconds * 1000;
    const round = this.tracer.startSpan('round', { startTime: epoch(start) }, trace.setSpan(ROOT_CONTEXT, request.span));
    const inRound = trace.setSpan(ROOT_CONTEXT, round);
    this.tracer.startSpan('upstream.call', { startTime: epoch(start) }, inRound).end(epoch(upstreamEnd));
    for (const tool of request.tools) {
      const span = this.tracer.startSpan(`tool ${tool.type}`, { startTime: epoch(tool.startedAt), attributes: { 'switchyard.tool.type': tool.type, 'switchyard.tool.outcome': tool.outcome } }, inRound);
      if (tool.outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(epoch(tool.endedAt));
    }
    request.tools.length = 0;
    round.end(epoch(end));
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
