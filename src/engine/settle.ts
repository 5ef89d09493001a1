// How a turn ends: its terminal state, the conversation's new items and a background run's
// remaining events written in one transaction before the client hears of it.
import { Errors, GatewayError, isStoreUnavailable } from '../errors.js';
import { ID_PREFIX, type ResponseObject } from '../protocol/responses.js';
import type { Settlement, SettleOutcome } from '../store/store.js';
import { newId } from '../util/ids.js';
import { ResponseAccumulator, type TerminalState } from './accumulator.js';
import { GatewayShutdown, type PreparedTurn } from './types.js';
import { newResponseObject } from './response-object.js';
import { RegistryInvariantError } from './round.js';
import { OwnershipLost, RunCancelled } from './run-ownership.js';

import type { EngineContext } from './context.js';

/** Ends a turn that failed (or was stopped) with the terminal state its cause calls for. */
export async function fail(ctx: EngineContext, acc: ResponseAccumulator, turn: PreparedTurn, err: unknown, signal: AbortSignal): Promise<ResponseObject> {
  if (!acc.started) acc.start();
  if (signal.aborted && signal.reason instanceof RunCancelled) return finish(ctx, acc, turn, { status: 'cancelled' });
  if (signal.aborted && signal.reason instanceof GatewayShutdown) return finish(ctx, acc, turn, { status: 'failed', error: { code: 'server_shutting_down', message: signal.reason.message } });
  if (signal.aborted && signal.reason instanceof OwnershipLost) return finish(ctx, acc, turn, { status: 'failed', error: { code: 'server_error', message: signal.reason.message } });
  if (signal.aborted) {
    return finish(ctx, acc, turn, { status: 'failed', error: { code: 'client_disconnected', message: 'The client disconnected before the response was complete.' } });
  }
  if (err instanceof GatewayError) turn.failure = err;
  const error = err instanceof GatewayError ? { code: 'server_error', message: err.message } : { code: 'server_error', message: 'The gateway failed while generating the response.' };
  if (!(err instanceof GatewayError) || err instanceof RegistryInvariantError) ctx.log.error({ err }, 'turn failed');
  else ctx.log.warn({ code: err.code, message: err.message }, 'turn failed');
  return finish(ctx, acc, turn, { status: 'failed', error });
}

/**
 * Ends the turn: the terminal state, the conversation's new items (only for a turn that did not
 * fail) and, for a background run, the rest of its event log are written in one transaction —
 * all of it, or none and the client hears a retryable failure — before the client hears of it.
 */
export async function finish(ctx: EngineContext, acc: ResponseAccumulator, turn: PreparedTurn, state: TerminalState): Promise<ResponseObject> {
  let response = acc.settle(state, Math.floor(Date.now() / 1000));
  const lost = turn.runController?.signal.reason instanceof OwnershipLost;
  // a run another process took over writes nothing: the store already holds what that process settled
  if (lost) turn.failure = settleFailure('not_owner', turn);
  else {
    const outcome = await settle(ctx, acc, turn, response, state.status !== 'failed' && state.status !== 'cancelled');
    if (outcome !== 'ok') {
      turn.failure = settleFailure(outcome, turn);
      response = acc.settle({ status: 'failed', error: { code: 'server_error', message: turn.failure.message } }, Math.floor(Date.now() / 1000));
      // the failed state without the conversation (best effort: the sweep settles it otherwise)
      if (outcome !== 'not_owner') await settle(ctx, acc, turn, response, false).catch(() => undefined);
    }
  }
  await release(ctx, turn);
  turn.hooks?.onSettled?.({ response, inputItems: turn.inputItems, callRecords: turn.callRecords, owner: turn.tenant });
  ctx.options.observer?.settled(response, turn.roundsRun ?? 0);
  acc.announceTerminal();
  return response;
}

/** Gives up what a prepared turn holds (its conversation lease); for a turn that will not run. */
export async function release(ctx: EngineContext, turn: PreparedTurn): Promise<void> {
  const lease = turn.conversationLease;
  if (lease === undefined) return;
  turn.conversationLease = undefined;
  await ctx.ownership.releaseLease(turn.request.conversationId!, lease);
}

/** Writes a turn's settlement; a store failure is logged and reported as `unavailable`. */
async function settle(ctx: EngineContext, acc: ResponseAccumulator, turn: PreparedTurn, response: ResponseObject, grow: boolean): Promise<SettleOutcome | 'unavailable' | 'unstorable'> {
  const settlement: Settlement = {};
  const conversationId = turn.request.conversationId;
  if (grow && conversationId !== null) {
    // the conversation grows by what this turn added: its input, then its output
    settlement.conversation = { id: conversationId, items: [...turn.inputItems, ...response.output], lease: turn.conversationLease };
  }
  if (turn.request.store) {
    settlement.record = { response, inputItems: turn.inputItems, owner: turn.tenant };
    // a run that could not be registered has no claim to lose (nor one for the sweep to find)
    if (turn.owned || turn.request.background) settlement.owner = ctx.ownership.owner;
    const terminal = turn.hooks?.unloggedEvents ? acc.terminalEvent() : null;
    if (terminal) settlement.events = [...(await turn.hooks!.unloggedEvents!()), terminal];
  }
  // kept wherever the turn's items are kept (stored response, conversation), never elsewhere
  if (turn.callRecords.length > 0 && (settlement.record || settlement.conversation)) settlement.callRecords = { responseId: response.id, records: turn.callRecords, owner: turn.tenant };
  if (settlement.record === undefined && settlement.conversation === undefined) return 'ok';
  try {
    const outcome = await ctx.store.settle(settlement);
    if (outcome === 'ok') {
      // the settlement released the lease along with the append
      if (settlement.conversation?.lease !== undefined) {
        await ctx.ownership.releaseLease(conversationId!, settlement.conversation.lease, true);
        turn.conversationLease = undefined;
      }
      if (settlement.events) turn.hooks?.logged?.(settlement.events.at(-1)!.sequence);
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

/** Stores a running response under this process's ownership (registered first, for a foreground run). */
export async function saveRunning(ctx: EngineContext, response: ResponseObject, turn: PreparedTurn): Promise<void> {
  try {
    if (!turn.request.background && turn.runController) {
      await ctx.ownership.register(response.id, turn.runController);
      turn.owned = true;
    }
    await ctx.store.saveOwned({ response, inputItems: turn.inputItems, owner: turn.tenant }, ctx.ownership.owner);
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
