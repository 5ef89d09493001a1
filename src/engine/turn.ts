import type { ResponseObject } from '../protocol/responses.js';
import type { ResponseStore } from '../store/store.js';
import type { DeclareContext } from '../tools/handler.js';
import type { UpstreamClient } from '../upstream/client.js';
import { ResponseAccumulator } from './accumulator.js';
import { GatewayShutdown, OwnershipLost, RunCancelled, type EventSink, type Logger, type PreparedTurn, type PrepareOptions, type RunHooks, type RunOutcome } from './types.js';
import type { EngineContext, EngineOptions, TurnObserver } from './context.js';
import { newTurnRun, runLoop } from './loop.js';
import { prepareTurn } from './prepare.js';
import { fail, newResponse, release } from './settle.js';
import { RunOwnership } from './run-ownership.js';
import { TurnAbort, type Cancellation } from '../util/abort.js';

export { OwnershipLost, RunCancelled };
export { GatewayShutdown };
export type { Logger, PreparedTurn, RunHooks, RunOutcome };
export type { EngineContext, EngineOptions, PrepareOptions, TurnObserver };

/**
 * The engine (architecture.md §3): a turn is prepared (prepare.ts: everything that can fail with
 * a 4xx), run (loop.ts: infer, translate, run gateway calls, repeat until the turn is done, needs
 * the client, or hits the cap — one public event lifecycle throughout) and settled (settle.ts).
 */
export class Engine {
  readonly ownership: RunOwnership;
  private readonly ctx: EngineContext;

  constructor(upstream: UpstreamClient, store: ResponseStore, declare: DeclareContext, options: EngineOptions, log: Logger) {
    this.ownership = options.ownership ?? new RunOwnership(store, options.conversations, log, { heartbeatMs: 2_000, staleAfterMs: 10_000 });
    this.ctx = { upstream, store, declare, options, log, ownership: this.ownership };
  }

  prepare(body: unknown, signal: Cancellation = new TurnAbort(), options: PrepareOptions = {}): Promise<PreparedTurn> {
    return prepareTurn(this.ctx, body, signal, options);
  }

  /**
   * Runs a prepared turn. `sink` receives the public events (null for blocking). Throws a
   * GatewayError only while nothing has been emitted; after that every failure is a
   * `response.failed` terminal event, and the terminal state is stored before it is announced.
   * What the caller learns beyond the response (a known failure, the stop sequence) is filled
   * into `hooks.outcome`.
   */
  async run(turn: PreparedTurn, sink: EventSink | null, callerSignal: Cancellation, drained?: () => Promise<void> | undefined, hooks: RunHooks = {}): Promise<ResponseObject> {
    const response = hooks.response ?? this.newResponse(turn);
    const acc = new ResponseAccumulator(response, sink, hooks.readsResponse !== true);
    if (hooks.outcome) hooks.outcome.response = response;
    // the run's own controller: the caller's abort, a cancellation or a lost ownership stop it
    const controller = hooks.controller ?? new TurnAbort();
    const forward = () => controller.abort(callerSignal.reason);
    const signal: Cancellation = controller;
    // the caller may hand its own controller (a route's client-gone one): nothing to forward then
    if (callerSignal !== controller) {
      if (callerSignal.aborted) forward();
      else callerSignal.addEventListener('abort', forward, { once: true });
    }
    const run = newTurnRun(turn, hooks, controller);
    // A background response is already stored as queued: every failure must settle it, so only a
    // foreground turn that has emitted nothing may still fail as a plain HTTP error.
    const mayThrow = hooks.response === undefined;
    try {
      return await runLoop(this.ctx, run, acc, signal, drained);
    } catch (err) {
      if (acc.finished) return acc.response;
      if (mayThrow && !acc.started && !signal.aborted) throw err;
      // anything that escaped the loop after the start (e.g. a store write) still ends the turn
      return fail(this.ctx, acc, run, err, signal);
    } finally {
      callerSignal.removeEventListener('abort', forward);
      // whatever ended the turn, it holds nothing any more
      this.ownership.untrack(response.id, controller);
      const released = release(this.ctx, turn);
      if (released) await released;
    }
  }

  /** Gives up what a prepared turn holds (its conversation lease); for a turn that will not run. */
  async release(turn: PreparedTurn): Promise<void> {
    await release(this.ctx, turn);
  }

  /** A new response for this turn (`queued` for a background run, else `in_progress`). */
  newResponse(turn: PreparedTurn): ResponseObject {
    return newResponse(turn);
  }
}
