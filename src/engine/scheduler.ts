import type { JsonObject } from '../protocol/responses.js';
import { parseJsonObject } from '../util/json.js';
import { ToolTimeoutError, type GatewayInvocation, type ItemEmitter, type PlannedInvocation, type ToolOutcome } from '../tools/types.js';
import type { PendingGatewayCall } from './round.js';

export interface SchedulerOptions {
  /** Sliding window: at most this many gateway calls run at once. */
  maxConcurrent: number;
}

/**
 * Runs one round's gateway calls (architecture.md §4): one slot per call in model call order,
 * a sliding window, per-call timeouts, same-name calls serialized unless the handler declares
 * them parallel-safe, errors isolated to their slot, results in call order. Public items are
 * opened in call order before any call runs, and closed as each finishes.
 */
export async function runGatewayCalls(
  calls: readonly PendingGatewayCall[],
  options: SchedulerOptions,
  emitter: ItemEmitter,
  signal: AbortSignal,
): Promise<ToolOutcome[]> {
  const outcomes: ToolOutcome[] = new Array(calls.length);
  const slots: Array<(() => Promise<void>) | null> = calls.map((pending, i) => {
    const immediate = immediateOutcome(pending);
    if (immediate) {
      outcomes[i] = immediate.outcome;
      if (immediate.invocation && pending.entry?.execution) {
        const execution = pending.entry.execution;
        const state = execution.begin(immediate.invocation, emitter);
        execution.end(immediate.invocation, immediate.outcome, emitter, state);
      }
      return null;
    }
    const entry = pending.entry!;
    const execution = entry.execution!;
    const invocation = { call: pending.call, entry, args: parseJsonObject(pending.call.arguments) as JsonObject, approvalRequestId: pending.approvalRequestId };
    const state = execution.begin(invocation, emitter);
    return async () => {
      const outcome = await runOne(execution.run.bind(execution), { ...invocation, signal, emit: emitter }, execution.timeoutMs, signal);
      outcomes[i] = outcome;
      execution.end(invocation, outcome, emitter, state);
    };
  });

  const window = new Semaphore(Math.max(1, options.maxConcurrent));
  const lastByName = new Map<string, Promise<void>>();
  const running: Promise<void>[] = [];
  slots.forEach((slot, i) => {
    if (!slot) return;
    const pending = calls[i];
    const serial = !pending.entry!.execution!.parallelSafe;
    const predecessor = serial ? lastByName.get(pending.call.modelName) : undefined;
    const task = (async () => {
      if (predecessor) await predecessor;
      await window.acquire();
      try {
        await slot();
      } finally {
        window.release();
      }
    })();
    if (serial) lastByName.set(pending.call.modelName, task);
    running.push(task);
  });
  await Promise.all(running);
  return outcomes;
}

async function runOne(
  run: (invocation: GatewayInvocation) => Promise<ToolOutcome>,
  invocation: GatewayInvocation,
  timeoutMs: number,
  parent: AbortSignal,
): Promise<ToolOutcome> {
  if (parent.aborted) return { output: 'Error: the request was cancelled.', isError: true };
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  // whichever comes first — the call's own result, its timeout, or a cancellation — is the outcome
  const stopped = new Promise<ToolOutcome>((resolve) => {
    timer = setTimeout(() => {
      resolve({ output: `Error: the tool call timed out after ${timeoutMs} ms.`, isError: true });
      controller.abort(new ToolTimeoutError(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    controller.signal.addEventListener('abort', () => resolve({ output: 'Error: the tool call was cancelled.', isError: true }), { once: true });
  });
  try {
    return await Promise.race([
      run({ ...invocation, signal: controller.signal }).catch((err: unknown) => ({ output: `Error: ${errorMessage(err)}`, isError: true })),
      stopped,
    ]);
  } finally {
    // no abort after a call finished: protocols such as MCP would send a needless cancellation
    clearTimeout(timer);
    parent.removeEventListener('abort', onParentAbort);
  }
}

/** Calls answered without running anything: unknown names, unconfigured tools, bad arguments. */
function immediateOutcome(pending: PendingGatewayCall): { outcome: ToolOutcome; invocation?: PlannedInvocation } | null {
  const { call, entry } = pending;
  if (!entry) {
    return { outcome: { output: `Error: unknown tool '${call.modelName}'. Use only the tools you were given.`, isError: true } };
  }
  if (!entry.execution) {
    return { outcome: { output: `Error: tool '${call.modelName}' is not available on this gateway.`, isError: true } };
  }
  const args = parseJsonObject(call.arguments);
  if (args === undefined) {
    return {
      outcome: { output: `Error: the arguments for '${call.modelName}' are not a valid JSON object: ${truncate(call.arguments, 200)}`, isError: true },
      invocation: { call, entry, args: {}, approvalRequestId: pending.approvalRequestId },
    };
  }
  return null;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(size: number) {
    this.available = size;
  }

  acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }
}
