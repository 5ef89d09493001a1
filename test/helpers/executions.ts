import type { ExecutionFactory } from '../../src/app.js';
import type { GatewayExecution, GatewayInvocation, ToolOutcome } from '../../src/tools/types.js';

export interface RecordedRun {
  name: string;
  args: Record<string, unknown>;
  startedAt: number;
  endedAt?: number;
  aborted: boolean;
}

/**
 * A test double implementing the real gateway execution interface: projects a
 * `web_search_call`-shaped public item and answers from `respond`.
 */
export function recordingExecution(options: {
  respond?: (inv: GatewayInvocation) => Promise<ToolOutcome> | ToolOutcome;
  parallelSafe?: boolean;
  timeoutMs?: number;
  runs?: RecordedRun[];
}): { factory: ExecutionFactory; runs: RecordedRun[] } {
  const runs = options.runs ?? [];
  const execution: GatewayExecution = {
    parallelSafe: options.parallelSafe ?? true,
    timeoutMs: options.timeoutMs ?? 5_000,
    begin(inv, emit) {
      const id = emit.newId('ws');
      const index = emit.add({ type: 'web_search_call', id, status: 'in_progress', action: { type: 'search', query: String(inv.args.query ?? '') } });
      emit.event('response.web_search_call.in_progress', index);
      emit.event('response.web_search_call.searching', index);
      return { index, id };
    },
    async run(inv) {
      const record: RecordedRun = { name: inv.call.modelName, args: inv.args, startedAt: Date.now(), aborted: false };
      runs.push(record);
      inv.signal.addEventListener('abort', () => (record.aborted = true), { once: true });
      try {
        return await (options.respond?.(inv) ?? { kind: 'ok', output: `results for ${String(inv.args.query)}` });
      } finally {
        record.endedAt = Date.now();
      }
    },
    end(inv, outcome, emit, state) {
      const { index, id } = state as { index: number; id: string };
      if (outcome.kind === 'ok') emit.event('response.web_search_call.completed', index);
      emit.done(index, { type: 'web_search_call', id, status: outcome.kind === 'ok' ? 'completed' : 'failed', action: { type: 'search', query: String(inv.args.query ?? '') } });
    },
  };
  return { factory: () => execution, runs };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    }, { once: true });
  });
}
