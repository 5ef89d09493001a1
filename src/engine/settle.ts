// How a turn ends: its terminal state, the conversation's new items and a background run's
// remaining events written in one transaction before the client hears of it.
import { Errors, GatewayError, isStoreUnavailable } from '../errors.js';
import { ID_PREFIX, type ResponseObject } from '../protocol/responses.js';
import type { Settlement, SettleOutcome } from '../store/store.js';
import { newId } from '../util/ids.js';
import { ResponseAccumulator, type TerminalState } from './accumulator.js';
import { GatewayShutdown, OwnershipLost, RunCancelled, type PreparedTurn, type TurnRun } from './types.js';
import { newResponseObject } from './response-object.js';
import { RegistryInvariantError } from './round.js';
import type { Cancellation } from '../util/abort.js';

import type { EngineContext } from './context.js';

/** Ends a turn that failed (or was stopped) with the terminal state its cause calls for. */
export async function fail(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, err: unknown, signal: Cancellation): Promise<ResponseObject> {
  if (!acc.started) acc.start();
  if (signal.aborted && signal.reason instanceof RunCancelled) return finish(ctx, acc, run, { status: 'cancelled' });
  if (signal.aborted && signal.reason instanceof GatewayShutdown) return finish(ctx, acc, run, { status: 'failed', error: { code: 'server_shutting_down', message: signal.reason.message } });
  if (signal.aborted && signal.reason instanceof OwnershipLost) return finish(ctx, acc, run, { status: 'failed', error: { code: 'server_error', message: signal.reason.message } });
  if (signal.aborted) {
    return finish(ctx, acc, run, { status: 'failed', error: { code: 'client_disconnected', message: 'The client disconnected before the response was complete.' } });
  }
  if (err instanceof GatewayError) run.outcome.failure = err;
  const error = err instanceof GatewayError ? { code: 'server_error', message: err.message } : { code: 'server_error', message: 'The gateway failed while generating the response.' };
  if (!(err instanceof GatewayError) || err instanceof RegistryInvariantError) ctx.log.error({ err }, 'turn failed');
  else ctx.log.warn({ code: err.code, message: err.message }, 'turn failed');
  return finish(ctx, acc, run, { status: 'failed', error });
}

/**
 * Ends the turn: the terminal state, the conversation's new items (only for a turn that did not
 * fail) and, for a background run, the rest of its event log are written in one transaction —
 * all of it, or none and the client hears a retryable failure — before the client hears of it.
 * A turn with nothing to write or release ends at once (no promise).
 */
export function finish(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, state: TerminalState): ResponseObject | Promise<ResponseObject> {
  const response = acc.settle(state, Math.floor(Date.now() / 1000));
  // a run another process took over writes nothing: the store already holds what that process settled
  if (run.controller.reason instanceof OwnershipLost) {
    run.outcome.failure = settleFailure('not_owner', run.turn);
    return ended(ctx, acc, run, response);
  }
  const settling = settle(ctx, acc, run, response, state.status !== 'failed' && state.status !== 'cancelled');
  return settling === 'ok' ? ended(ctx, acc, run, response) : finishSettling(ctx, acc, run, response, settling);
}

/** `finish` once its settlement is on its way: a failed one settles the turn as failed instead. */
async function finishSettling(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, response: ResponseObject, settling: SettleResult | Promise<SettleResult>): Promise<ResponseObject> {
  const outcome = await settling;
  if (outcome !== 'ok') {
    const failure = settleFailure(outcome, run.turn);
    run.outcome.failure = failure;
    response = acc.settle({ status: 'failed', error: { code: 'server_error', message: failure.message } }, Math.floor(Date.now() / 1000));
    // the failed state without the conversation (best effort: the sweep settles it otherwise)
    if (outcome !== 'not_owner') await Promise.resolve(settle(ctx, acc, run, response, false)).catch(() => undefined);
  }
  return ended(ctx, acc, run, response);
}

/** The settled turn: its lease released, then its hooks and metrics told and its terminal event announced. */
function ended(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, response: ResponseObject): ResponseObject | Promise<ResponseObject> {
  const released = release(ctx, run.turn);
  return released ? released.then(() => announce(ctx, acc, run, response)) : announce(ctx, acc, run, response);
}

/** The end made known: the run's hooks, the metrics, then the terminal event (its JSON kept for a blocking body). */
function announce(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, response: ResponseObject): ResponseObject {
  const { turn } = run;
  run.hooks.onSettled?.({ response, inputItems: turn.inputItems, callRecords: run.callRecords, owner: turn.tenant });
  ctx.options.observer?.settled(response, run.roundsRun);
  acc.announceTerminal();
  const json = acc.madeSettledJson;
  if (json !== null) run.outcome.responseJson = json;
  return response;
}

/**
 * Gives up what a prepared turn holds (its conversation lease): when its run ends, or for a turn
 * that will not run. Idempotent: a lease already released (by a settlement) is not released again.
 * Undefined when the turn holds nothing (most turns: nothing to wait for).
 */
export function release(ctx: EngineContext, turn: PreparedTurn): Promise<void> | undefined {
  return turn.conversationLease !== undefined ? ctx.ownership.releaseLease(turn.request.conversationId!, turn.conversationLease) : undefined;
}

type SettleResult = SettleOutcome | 'unavailable' | 'unstorable';

/**
 * Writes a turn's settlement; a store failure is logged and reported as `unavailable`. A turn
 * neither stored nor in a conversation has nothing to write: `ok` at once, without a promise.
 */
function settle(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, response: ResponseObject, grow: boolean): SettleResult | Promise<SettleResult> {
  const { request } = run.turn;
  if (!request.store && !(grow && request.conversationId !== null)) {
    // what the model saw of the turn's gateway calls, for a client that resends its items
    if (run.callRecords.length > 0) ctx.options.unstoredRecords?.keep(run.callRecords, run.turn.tenant);
    return 'ok';
  }
  return writeSettlement(ctx, acc, run, response, grow);
}

async function writeSettlement(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun, response: ResponseObject, grow: boolean): Promise<SettleResult> {
  const { turn, hooks } = run;
  const settlement: Settlement = {};
  const conversationId = turn.request.conversationId;
  if (grow && conversationId !== null) {
    // the conversation grows by what this turn added: its input, then its output
    settlement.conversation = { id: conversationId, items: [...turn.inputItems, ...response.output], lease: turn.conversationLease };
  }
  if (turn.request.store) {
    settlement.record = { response, inputItems: turn.inputItems, owner: turn.tenant };
    // a run that could not be registered has no claim to lose (nor one for the sweep to find)
    if (run.owned || turn.request.background) settlement.owner = ctx.ownership.owner;
    const terminal = hooks.unloggedEvents ? acc.terminalEvent() : null;
    if (terminal) settlement.events = [...(await hooks.unloggedEvents!()), terminal];
  }
  // kept wherever the turn's items are kept (stored response, conversation), never elsewhere
  if (run.callRecords.length > 0 && (settlement.record || settlement.conversation)) settlement.callRecords = { responseId: response.id, records: run.callRecords, owner: turn.tenant };
  try {
    // the same text as the terminal event and a blocking body (a response it cannot be made of is unstorable, below)
    if (settlement.record) settlement.record.responseJson = acc.settledResponseJson();
    const outcome = await ctx.store.settle(settlement);
    if (outcome === 'ok') {
      // the settlement released the lease along with the append: the ownership only forgets it
      if (settlement.conversation?.lease !== undefined) await ctx.ownership.releaseLease(conversationId!, settlement.conversation.lease, true);
      if (settlement.events) hooks.logged?.(settlement.events.at(-1)!.sequence);
    } else {
      ctx.log.warn({ responseId: response.id, outcome }, 'the turn could not be settled');
    }
    return outcome;
  } catch (err) {
    ctx.log.error({ err, responseId: response.id }, 'storing the response failed');
    // a value that cannot be serialized (a stack overflow, a cycle) would fail the same way
    // again: never reported as a store outage worth retrying
    return isSerializationFailure(err) ? 'unstorable' : 'unavailable';
  }
}

/**
 * Stores a running response under this process's ownership (a foreground run is registered with
 * it, in one write); `responseJson` is its JSON when the caller has just made it.
 */
export async function saveRunning(ctx: EngineContext, response: ResponseObject, run: TurnRun, responseJson?: string): Promise<void> {
  const { turn } = run;
  const record = { response, inputItems: turn.inputItems, owner: turn.tenant, responseJson };
  try {
    if (turn.request.background) {
      // registered when it was queued, and owned since this process claimed it
      await ctx.store.saveOwned(record, ctx.ownership.owner);
    } else {
      await ctx.ownership.startRun(record, run.controller);
      run.owned = true;
    }
  } catch (err) {
    // the final settlement decides whether the client hears of a store failure
    ctx.log.error({ err, responseId: response.id }, 'storing the running response failed');
  }
}

/** JSON.stringify's failures: RangeError (nesting too deep for the stack), TypeError (cycles, BigInt). */
function isSerializationFailure(err: unknown): boolean {
  return (err instanceof RangeError || err instanceof TypeError) && !isStoreUnavailable(err);
}

/** Why a turn that was generated is reported as failed: its settlement could not be written. */
function settleFailure(outcome: Exclude<SettleOutcome, 'ok'> | 'unavailable' | 'unstorable', turn: PreparedTurn): GatewayError {
  switch (outcome) {
    case 'conversation_not_found':
      return Errors.conversationDeletedDuringTurn(turn.request.conversationId);
    case 'lease_lost':
      return Errors.conversationLeaseLost();
    case 'not_owner':
      return Errors.runTakenOver();
    case 'unavailable':
      return Errors.unsettledStoreUnavailable();
    case 'unstorable':
      return Errors.unstorable();
  }
}

/** A new response for this turn (`queued` for a background run, else `in_progress`). */
export function newResponse(turn: PreparedTurn): ResponseObject {
  const response = newResponseObject(newId(ID_PREFIX.response), Math.floor(Date.now() / 1000), turn.request);
  if (turn.request.background) response.status = 'queued';
  return response;
}
