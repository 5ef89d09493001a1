import type { Item, JsonObject } from '../protocol/responses.js';
import { parseJsonObject } from '../util/json.js';
import { withFields } from '../util/objects.js';
import { ToolTimeoutError, toolError, type GatewayInvocation, type ItemEmitter, type PlannedInvocation, type ToolOutcome } from '../tools/types.js';
import type { PendingGatewayCall } from './types.js';
import { TurnAbort, type Cancellation } from '../util/abort.js';

export interface SchedulerOptions {
  /** Sliding window: at most this many gateway calls run at once. */
  maxConcurrent: number;
}

/**
 * The gateway calls of one turn (architecture.md §4). The window and the same-name lanes belong
 * to the turn, not to a round: a call that timed out in round 0 but is still stopping holds its
 * window slot and its tool's lane, so a call to that tool in round 1 waits for it (for at most
 * STOP_GRACE_MS) instead of overlapping it.
 */
export class TurnScheduler {
  private readonly window: Semaphore;
  /** Per model-visible name: resolves once the last serialized call to it has really stopped. */
  private readonly lanes = new Map<string, Promise<void>>();

  constructor(options: SchedulerOptions) {
    this.window = new Semaphore(Math.max(1, options.maxConcurrent));
  }

  /**
   * Runs one round's gateway calls: one slot per call in model call order, a sliding window,
   * per-call timeouts, same-name calls serialized unless the handler declares them parallel-safe,
   * errors isolated to their slot, results in call order. Public items are opened in call order
   * before any call runs, and closed as each finishes.
   */
  async run(calls: readonly PendingGatewayCall[], emitter: ItemEmitter, signal: Cancellation): Promise<ScheduledOutcome[]> {
    const outcomes: ScheduledOutcome[] = new Array(calls.length);
    const itemIds: Array<string | undefined> = new Array(calls.length);
    // a slot reports its outcome, and how to wait for a call cut short to really stop running
    const slots: Array<(() => Promise<{ stopped: Promise<void> | undefined }>) | null> = calls.map((pending, i) => {
      // the first public item a call opens is the one its model-facing record is kept under
      const tracked: ItemEmitter = withFields(emitter, { add: (item: Item) => ((itemIds[i] ??= item.id), emitter.add(item)) });
      const immediate = immediateOutcome(pending);
      if (immediate) {
        outcomes[i] = immediate.outcome;
        if (immediate.invocation && pending.entry?.execution) {
          const execution = pending.entry.execution;
          const state = execution.begin(immediate.invocation, tracked);
          execution.end(immediate.invocation, immediate.outcome, tracked, state);
        }
        return null;
      }
      const entry = pending.entry!;
      const execution = entry.execution!;
      const invocation = { call: pending.call, entry, args: parseJsonObject(pending.call.arguments) as JsonObject, approvalRequestId: pending.approvalRequestId };
      const state = execution.begin(invocation, tracked);
      return async () => {
        const { outcome, stopped } = await runOne(execution.run.bind(execution), withFields(invocation, { emit: tracked }), execution.timeoutMs, signal);
        outcomes[i] = outcome;
        execution.end(invocation, outcome, tracked, state);
        // wrapped: an async function returning a promise would wait for it
        return { stopped };
      };
    });

    const reported: Promise<void>[] = [];
    slots.forEach((slot, i) => {
      if (!slot) return;
      const pending = calls[i];
      const serial = !pending.entry!.execution!.parallelSafe;
      const predecessor = serial ? this.lanes.get(pending.call.modelName) : undefined;
      let report!: () => void;
      reported.push(new Promise<void>((resolve) => (report = resolve)));
      // The window slot and the same-name lane are held until the call has really stopped: a
      // timed-out call that ignores its abort must not overlap its successor, in this round or a
      // later one (for at most STOP_GRACE_MS, so one misbehaving executor cannot stall the turn).
      const released = (async () => {
        if (predecessor) await predecessor;
        await this.window.acquire();
        let stopped: Promise<void> | undefined;
        try {
          ({ stopped } = await slot());
        } finally {
          report();
          if (stopped) await withinGrace(stopped);
          this.window.release();
        }
      })();
      if (serial) this.lanes.set(pending.call.modelName, released);
    });
    await Promise.all(reported);
    return outcomes.map((outcome, i) => (itemIds[i] ? withFields(outcome, { itemId: itemIds[i] }) : outcome));
  }
}

/** A call's outcome, with the public item it was projected into (none for an unknown tool). */
export type ScheduledOutcome = ToolOutcome & { itemId?: string };

/** One round's gateway calls on a scheduler of their own (no earlier round to wait for). */
export function runGatewayCalls(calls: readonly PendingGatewayCall[], options: SchedulerOptions, emitter: ItemEmitter, signal: Cancellation): Promise<ScheduledOutcome[]> {
  return new TurnScheduler(options).run(calls, emitter, signal);
}

/** How long a slot stays held for a call that outlived its timeout or abort. */
const STOP_GRACE_MS = 1_000;

/** Resolves once `stopped` does, or after STOP_GRACE_MS (its timer cleared when `stopped` wins). */
function withinGrace(stopped: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, STOP_GRACE_MS).unref();
    void stopped.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function runOne(
  run: (invocation: GatewayInvocation) => Promise<ToolOutcome>,
  invocation: Omit<GatewayInvocation, 'signal'>,
  timeoutMs: number,
  parent: Cancellation,
): Promise<{ outcome: ToolOutcome; stopped: Promise<void> | undefined }> {
  if (parent.aborted) return { outcome: toolError('the request was cancelled.', 'fatal'), stopped: undefined };
  // the call's own abort (the request's, or its timeout); the tool gets its real AbortSignal
  const controller = new TurnAbort();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  // whichever comes first — the call's own result, its timeout, or a cancellation — is the outcome
  const stoppedEarly = new Promise<ToolOutcome>((resolve) => {
    timer = setTimeout(() => {
      resolve(toolError(`the tool call timed out after ${timeoutMs} ms.`, 'fatal'));
      controller.abort(new ToolTimeoutError(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    controller.addEventListener('abort', () => resolve(toolError('the tool call was cancelled.', 'fatal')));
  });
  let finished = false;
  const running = run(withFields(invocation, { signal: controller.signal }))
    .catch((err: unknown) => toolError(errorMessage(err), 'fatal'))
    .then((outcome) => ((finished = true), outcome));
  try {
    const outcome = await Promise.race([running, stoppedEarly]);
    // `stopped`: only for a call cut short (timed out, cancelled) that may still be running
    return { outcome, stopped: finished ? undefined : running.then(() => undefined) };
  } finally {
    // no abort after a call finished: protocols such as MCP would send a needless cancellation
    clearTimeout(timer);
    parent.removeEventListener('abort', onParentAbort);
  }
}

/** Calls answered without running anything: unknown names, unconfigured tools, bad arguments. */
function immediateOutcome(pending: PendingGatewayCall): { outcome: ToolOutcome; invocation?: PlannedInvocation } | null {
  const { call, entry } = pending;
  if (pending.outcome) return { outcome: pending.outcome };
  if (!entry) {
    return { outcome: toolError(`unknown tool '${call.modelName}'. Use only the tools you were given.`) };
  }
  if (!entry.execution) {
    return { outcome: toolError(`tool '${call.modelName}' is not available on this gateway.`, 'fatal') };
  }
  const args = parseJsonObject(call.arguments);
  if (pending.refusal) {
    return { outcome: toolError(pending.refusal, 'fatal'), invocation: { call, entry, args: args ?? {}, approvalRequestId: pending.approvalRequestId } };
  }
  if (args === undefined) {
    return {
      outcome: toolError(`the arguments for '${call.modelName}' are not a valid JSON object: ${truncate(call.arguments, 200)}`),
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
