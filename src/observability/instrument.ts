import type { McpService } from '../mcp/service.js';
import type { GatewayExecution, GatewayInvocation } from '../tools/types.js';
import { withFields } from '../util/objects.js';
import type { GatewayMetrics } from './metrics.js';

/** Told of each finished gateway tool call (tracing): times from `performance.now()`. */
export type ToolListener = (type: string, startedAt: number, endedAt: number, outcome: string) => void;

/**
 * Counts failed store operations without touching the store classes: each method of the
 * instance is shadowed once (at startup) by a wrapper that notes a rejection and rethrows it.
 */
export function countStoreErrors<T extends object>(store: T, metrics: GatewayMetrics): T {
  const wrapped = Object.create(store) as Record<string, unknown>;
  for (let proto = Object.getPrototypeOf(store); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || Object.prototype.hasOwnProperty.call(wrapped, name)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (!descriptor || typeof descriptor.value !== 'function') continue;
      const method = descriptor.value as (...args: unknown[]) => unknown;
      wrapped[name] = function (this: unknown, ...args: unknown[]) {
        let result: unknown;
        try {
          result = method.apply(store, args);
        } catch (err) {
          metrics.storeError(name);
          throw err;
        }
        if (result instanceof Promise) {
          return result.catch((err: unknown) => {
            metrics.storeError(name);
            throw err;
          });
        }
        return result;
      };
    }
  }
  return wrapped as T;
}

/**
 * Counts MCP `tools/list` and `tools/call` failures by server label, and times calls (MCP
 * executions are built by the mcp handler itself, not through `executionFor`).
 */
export function instrumentMcp(mcp: McpService, metrics: GatewayMetrics | undefined, debug: ((obj: object, msg: string) => void) | undefined, onTool?: ToolListener): void {
  const listTools = mcp.listTools.bind(mcp);
  const callTool = mcp.callTool.bind(mcp);
  mcp.listTools = async (server, signal) => {
    try {
      return await listTools(server, signal);
    } catch (err) {
      metrics?.mcpFailure('list', server.label);
      throw err;
    }
  };
  mcp.callTool = async (server, name, args, signal, timeoutMs) => {
    const started = performance.now();
    const outcome = await callTool(server, name, args, signal, timeoutMs);
    const seconds = (performance.now() - started) / 1000;
    if (outcome.error !== null) metrics?.mcpFailure('call', server.label);
    metrics?.toolCall('mcp', seconds);
    onTool?.('mcp', started, started + seconds * 1000, outcome.error === null ? 'ok' : 'error');
    debug?.({ tool: 'mcp', server: server.label, name, durationMs: Math.round(seconds * 1000), outcome: outcome.error === null ? 'ok' : 'error' }, 'tool call finished');
    return outcome;
  };
}

/** A gateway execution whose calls are timed (tool call duration by type, and a debug log line). */
export function timedExecution(type: string, execution: GatewayExecution, metrics: GatewayMetrics | undefined, debug: ((obj: object, msg: string) => void) | undefined, timeoutMs: number, onTool?: ToolListener): GatewayExecution {
  const timed = withFields(execution, {
    timeoutMs,
    begin: execution.begin.bind(execution),
    end: execution.end.bind(execution),
    requiresApproval: execution.requiresApproval?.bind(execution),
    requestApproval: execution.requestApproval?.bind(execution),
    async run(invocation: GatewayInvocation) {
      const started = performance.now();
      let outcome: 'ok' | 'error' = 'error';
      try {
        const result = await execution.run(invocation);
        outcome = result.kind === 'ok' ? 'ok' : 'error';
        return result;
      } finally {
        const seconds = (performance.now() - started) / 1000;
        metrics?.toolCall(type, seconds);
        onTool?.(type, started, started + seconds * 1000, outcome);
        debug?.({ tool: type, callId: invocation.call.callId, durationMs: Math.round(seconds * 1000), outcome }, 'tool call finished');
      }
    },
  });
  return timed;
}
