// The turn loop: infer, translate, run gateway calls, repeat until the turn is done, needs the
// client or hits a cap. Every exit goes through finish/fail (settle.ts); after a round,
// classifyRound decides which.
import { Errors, upstreamStreamError } from '../errors.js';
import type { ModelItem, ModelRequest } from '../protocol/model.js';
import type { Item, ResponseObject } from '../protocol/responses.js';
import { APPROVAL_GATES, preludeFor } from '../tools/registry.js';
import type { ItemEmitter } from '../tools/types.js';
import { useApprovals } from './approvals.js';
import { newId } from '../util/ids.js';
import { withFields } from '../util/objects.js';
import type { Cancellation, TurnAbort } from '../util/abort.js';
import { parseJsonObject } from '../util/json.js';
import { ResponseAccumulator } from './accumulator.js';
import { CitationBook } from './citations.js';
import type { PendingGatewayCall, PreparedTurn, RunHooks, TurnRun } from './types.js';
import { openRound } from './constrained-call.js';
import { classifyRound } from './classify.js';
import { offeredNames, RoundTranslator } from './round.js';
import { TurnScheduler } from './scheduler.js';

import type { EngineContext } from './context.js';
import { fail, finish, saveRunning } from './settle.js';

/** A new run of a prepared turn: the state that changes while it runs starts here. */
export function newTurnRun(turn: PreparedTurn, hooks: RunHooks, controller: TurnAbort): TurnRun {
  return { turn, hooks, controller, conversation: turn.conversation, callRecords: [], outcome: hooks.outcome ?? {}, owned: false, roundsRun: 0 };
}

/** What a round runs when it has no gateway calls, or its output was cut short: nothing. */
const NOTHING_RUN = { calls: [], approvalsRequested: 0, capped: false } as const;

/**
 * Runs a turn's rounds; every exit ends the turn through `finish` or `fail`: after a round,
 * `classifyRound` decides (done, client action, incomplete, or go on); a failure or an abort fails it.
 */
export async function runLoop(ctx: EngineContext, run: TurnRun, acc: ResponseAccumulator, signal: Cancellation, drained: (() => Promise<void> | undefined) | undefined): Promise<ResponseObject> {
  const { turn } = run;
  const citations = new CitationBook();
  // made for the first gateway call or approval request (most turns have none)
  let emitter: ItemEmitter | undefined;
  const emitterOf = () => (emitter ??= itemEmitter(acc, citations));
  let gatewayCallsMade = 0;
  let startedTools = false;
  // one scheduler for the whole turn: same-name serialization holds across rounds
  let scheduler: TurnScheduler | undefined;
  /**
   * What the model has not been sent yet (a round's output, gateway calls' results), in order:
   * joined to the conversation when the next round's request is made, so a turn whose one round
   * ends it never copies its conversation (a resent history can be thousands of items long).
   */
  let added: ModelItem[] = [];
  /** The run's own copy of the conversation, once a round has gone on. */
  let grown: ModelItem[] | undefined;
  /** Runs gateway calls; their results join this round's additions (and the run's call records). */
  const runCalls = async (calls: readonly PendingGatewayCall[]) => {
    scheduler ??= new TurnScheduler({ maxConcurrent: ctx.options.maxConcurrentGatewayCalls });
    const outcomes = await scheduler.run(calls, emitterOf(), signal);
    gatewayCallsMade += calls.length;
    // the calls of one round were one assistant turn for the model: replayed together later
    const round = calls[0]?.call.callId;
    calls.forEach((pending, i) => {
      const { callId, modelName, arguments: args } = pending.call;
      added.push({ type: 'function_call_output', callId, output: outcomes[i].output });
      const itemId = outcomes[i].itemId;
      if (itemId) run.callRecords.push({ itemId, callId, name: modelName, arguments: args, output: outcomes[i].output, round });
    });
  };
  /** Once the response has started: the discovered lists, then the calls the client approved (the only wait). */
  const startTools = (): Promise<void> | undefined => {
    startedTools = true;
    for (const item of turn.preludeItems) emitPrelude(acc, item);
    // an approval is used up only now that its call starts, not when the turn was prepared
    return turn.approvedCalls.length > 0 ? useApprovals(turn.approvedCalls, ctx.store, turn.tenant).then(runCalls) : undefined;
  };
  /**
   * A round's gateway calls: those that need the client's approval are asked for (and end the
   * turn like client calls), the others run up to `max_tool_calls`.
   */
  const dispatch = async (gatewayCalls: readonly PendingGatewayCall[]) => {
    let approvalsRequested = 0;
    let calls = gatewayCalls.filter((pending) => {
      const execution = pending.entry?.execution;
      if (!execution?.requiresApproval || !pending.entry) return true;
      const args = parseJsonObject(pending.call.arguments);
      if (args === undefined) return true;
      const invocation = { call: pending.call, entry: pending.entry, args };
      if (!execution.requiresApproval(invocation)) return true;
      execution.requestApproval?.(invocation, emitterOf());
      approvalsRequested++;
      return false;
    });
    await recordApprovalRequests(ctx, acc, turn, approvalsRequested);
    let capped = false;
    const cap = turn.request.maxToolCalls;
    if (cap !== null && gatewayCallsMade + calls.length > cap) {
      calls = calls.slice(0, Math.max(0, cap - gatewayCallsMade));
      capped = true;
    }
    if (calls.length > 0) await runCalls(calls);
    return { calls, approvalsRequested, capped };
  };

  // Approved calls must have run before the model is asked again: their results are part of
  // round 0's request, so the response starts before the upstream is contacted.
  if (turn.approvedCalls.some((answer) => answer.approve)) {
    await begin(ctx, acc, run);
    await startTools();
  }

  for (let round = 0; ; round++) {
    const roundStart = performance.now();
    run.roundsRun = round + 1;
    if (added.length > 0) {
      // the turn's own list is copied once, by the first round that goes on; the copy grows after
      if (grown === undefined) grown = run.conversation.concat(added);
      else grown.push(...added);
      run.conversation = grown;
      added = [];
    }
    const tools = round > 0 && turn.toolsFollowRegistry ? turn.registry.visibleFunctions() : turn.tools;
    const request: ModelRequest = withFields(turn.base, {
      items: run.conversation,
      tools,
      // a forced choice applies to the first round only, or the loop would force it forever
      toolChoice: round === 0 ? turn.toolChoice : turn.toolChoice === 'none' ? 'none' : tools.length > 0 ? 'auto' : undefined,
    });
    // a refusal here reaches run(): an HTTP error if nothing was emitted yet, else response.failed
    const stream = await openRound(ctx.upstream, request, round === 0 ? turn.registry : undefined, signal, ctx.log);
    try {
      // each a promise only when it has something to wait for (a stored turn, approved calls)
      const saving = acc.started ? undefined : begin(ctx, acc, run);
      if (saving) await saving;
      const starting = startedTools ? undefined : startTools();
      if (starting) await starting;
    } catch (err) {
      stream.close();
      throw err;
    }

    // loaded deferred tools are callable though not declared (mode `result`), unless the client narrowed the choice
    const translator = new RoundTranslator(acc, turn.registry, citations, offeredNames(request.tools ?? [], request.toolChoice), request.toolChoice !== 'none' && turn.toolsFollowRegistry);
    try {
      // a batch that is already there is taken without a turn of the microtask queue
      for (let next = stream.read(); ; next = stream.read()) {
        const batch = next instanceof Promise ? await next : next;
        if (batch === null) break;
        for (const event of batch) {
          if (event.kind === 'error') throw upstreamStreamError(event, 'The upstream failed mid-stream');
          translator.push(event);
        }
        // backpressure: a slow client slows the upstream read instead of growing a buffer
        const wait = drained?.();
        if (wait) await wait;
      }
      if (!translator.sawFinish) throw Errors.upstreamDisconnected('The upstream stream ended before the response was complete.');
    } catch (err) {
      stream.close();
      translator.finish('incomplete');
      return fail(ctx, acc, run, err, signal);
    }

    const upstreamDone = performance.now();
    const result = translator.finish(translator.truncated ? 'incomplete' : 'completed');
    run.outcome.stopSequence = result.stopSequence;
    added.push(...result.modelItems);
    // a cut-short output's calls are not run
    const cutShort = result.finishReason === 'length' ? 'max_output_tokens' : result.finishReason === 'content_filter' ? 'content_filter' : undefined;
    const { calls, approvalsRequested, capped } = cutShort || result.gatewayCalls.length === 0 ? NOTHING_RUN : await dispatch(result.gatewayCalls);
    if (signal.aborted) return fail(ctx, acc, run, new Error('aborted'), signal);
    const needsClient = result.clientCalls > 0 || approvalsRequested > 0;
    const roundEnd = performance.now();
    ctx.options.observer?.round((upstreamDone - roundStart) / 1000, (roundEnd - upstreamDone) / 1000);
    ctx.log.debug?.(
      { responseId: acc.response.id, round, model: request.model, upstreamMs: Math.round(upstreamDone - roundStart), gatewayMs: Math.round(roundEnd - upstreamDone), gatewayCalls: calls.length, clientCalls: result.clientCalls, approvals: approvalsRequested, finishReason: result.finishReason },
      'round finished',
    );

    const decision = classifyRound({ cutShort, hasClientCalls: needsClient, gatewayResults: calls.length, toolCallsCapped: capped, round, maxRounds: ctx.options.maxToolRounds });
    switch (decision.next) {
      case 'continue':
        continue;
      case 'incomplete':
        return finish(ctx, acc, run, { status: 'incomplete', incompleteReason: decision.reason });
      case 'done':
      case 'requires_client_action':
        return finish(ctx, acc, run, { status: 'completed' });
    }
  }
}

/**
 * Starts the public lifecycle; stored responses can be retrieved while they run (in_progress): a
 * promise only for a stored turn (its running state is written).
 */
function begin(ctx: EngineContext, acc: ResponseAccumulator, run: TurnRun): Promise<void> | undefined {
  const { turn } = run;
  const running = acc.start();
  const auto = turn.autoCompaction;
  if (auto) {
    const index = acc.addItem(auto.item);
    acc.doneItem(index, auto.item);
    acc.addUsage(auto.usage.input_tokens, auto.usage.output_tokens, auto.usage.input_tokens_details.cached_tokens, auto.usage.output_tokens_details.reasoning_tokens);
  }
  // the running response as the events carried it, unless an item has been added since
  return turn.request.store ? saveRunning(ctx, acc.response, run, auto || running === null ? undefined : running) : undefined;
}

/** The approval requests just emitted (the last `count` output items) are bound and remembered. */
async function recordApprovalRequests(ctx: EngineContext, acc: ResponseAccumulator, turn: PreparedTurn, count: number): Promise<void> {
  const output = acc.response.output;
  for (const item of output.slice(output.length - count)) {
    for (const gate of APPROVAL_GATES) {
      const digest = gate.bind(item, turn.registry);
      if (digest !== undefined) await ctx.store.recordApproval(item.id, digest, turn.tenant);
    }
  }
}

/** An item that opens the turn (discovery output): its tool type's lifecycle, else added and done. */
function emitPrelude(acc: ResponseAccumulator, item: Item): void {
  const lifecycle = preludeFor(item.type);
  const index = acc.addItem(lifecycle ? lifecycle.opened(item) : item);
  for (const type of lifecycle?.events ?? []) acc.emit(type, { item_id: item.id, output_index: index });
  acc.doneItem(index, item);
}

/** The view of the response a gateway call's execution gets. */
function itemEmitter(acc: ResponseAccumulator, citations: CitationBook): ItemEmitter {
  return {
    registerSources: (sources) => citations.register(sources),
    registerFiles: (files) => citations.registerFiles(files),
    add: (item) => acc.addItem(item),
    event: (type, outputIndex, fields) => acc.emit(type, { item_id: acc.response.output[outputIndex].id, output_index: outputIndex, ...fields }),
    done: (outputIndex, item) => acc.doneItem(outputIndex, item),
    newId,
  };
}
