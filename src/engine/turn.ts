import { Errors, GatewayError, invalidRequest, isStoreUnavailable, notFound, upstreamStreamError } from '../errors.js';
import type { ImageUrlHandler } from '../net/image-inline.js';
import type { ModelItem, ModelRequest, ModelResponseFormat } from '../protocol/model.js';
import { ID_PREFIX, type Item, type JsonObject, type ResponseObject } from '../protocol/responses.js';
import type { ConversationStore } from '../store/conversations.js';
import { DEFAULT_TENANT } from '../store/tenant.js';
import type { GatewayCallRecord, ResponseStore, Settlement, SettleOutcome } from '../store/store.js';
import type { DeclareContext } from '../tools/handler.js';
import { APPROVAL_GATES, discoverTools, handlerForCallItem, itemWithoutCredentials, preludeFor, registerTools, resolveToolChoice, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError, type ItemEmitter } from '../tools/types.js';
import { useApprovals } from './approvals.js';
import type { UpstreamClient } from '../upstream/client.js';
import { newId } from '../util/ids.js';
import { normalizeStoredItem } from '../util/items.js';
import { parseJsonObject } from '../util/json.js';
import { ResponseAccumulator, type EventSink, type TerminalState } from './accumulator.js';
import { CitationBook } from './citations.js';
import { applyCompactions, maybeCompact, parseContextManagement } from './compaction.js';
import { GatewayShutdown, type Logger, type PreparedTurn, type PrepareOptions, type RunHooks } from './types.js';
import { classifyRound } from './classify.js';
import { loadSearchedTools, toModelItems } from './conversation.js';
import { openRound } from './constrained-call.js';
import { resolveItemReferences } from './item-references.js';
import { parseCreateRequest, type CreateRequest } from './request.js';
import { newResponseObject } from './response-object.js';
import { offeredNames, RegistryInvariantError, RoundTranslator, type PendingGatewayCall } from './round.js';
import { OwnershipLost, RunCancelled, RunOwnership } from './run-ownership.js';
import { TurnScheduler } from './scheduler.js';

export { OwnershipLost, RunCancelled };
export { GatewayShutdown };
export type { Logger, PreparedTurn, RunHooks };

export interface EngineOptions {
  maxToolRounds: number;
  maxConcurrentGatewayCalls: number;
  /** At most this many `mcp` declarations per request. */
  maxMcpServersPerRequest: number;
  /** Conversations (`conversation` on create); absent = not available. */
  conversations?: ConversationStore;
  /**
   * This process's runs and leases, heart-beaten (src/app.ts starts it). Absent: an engine of its
   * own, whose leases last long since nothing renews them.
   */
  ownership?: RunOwnership;
  /** What becomes of image URLs in the context before the model sees them (limits.imageUrls); absent = forwarded. */
  images?: ImageUrlHandler;
  /** Told about every round and settled response (metrics); absent = nothing measured. */
  observer?: TurnObserver;
}

/** What the turn loop reports for metrics (src/observability/metrics.ts implements it). */
export interface TurnObserver {
  /** One inference round: upstream = sending to the end of its stream; gateway = the rest (tool calls, storage). */
  round(upstreamSeconds: number, gatewaySeconds: number): void;
  /** A response reached its terminal state after `rounds` inference rounds. */
  settled(response: ResponseObject, rounds: number): void;
}

/**
 * The turn loop (architecture.md §3): infer, translate, run gateway calls, repeat until the
 * turn is done, needs the client, or hits the cap — one public event lifecycle throughout.
 */
export class Engine {
  readonly ownership: RunOwnership;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly store: ResponseStore,
    private readonly declare: DeclareContext,
    private readonly options: EngineOptions,
    private readonly log: Logger,
  ) {
    this.ownership = options.ownership ?? new RunOwnership(store, options.conversations, log, { heartbeatMs: 2_000, staleAfterMs: 10_000 });
  }

  async prepare(body: unknown, signal: AbortSignal = new AbortController().signal, options: PrepareOptions = {}): Promise<PreparedTurn> {
    const request = parseCreateRequest(body);
    const tenant = options.tenant ?? DEFAULT_TENANT;
    const history: JsonObject[] = [];
    /** Model-facing call records the chain carries in memory (a WebSocket connection's cache). */
    const heldRecords: GatewayCallRecord[] = [];
    if (request.previousResponseId !== null) {
      const chain = (await options.resolvePrevious?.(request.previousResponseId)) ?? (await this.store.chain(request.previousResponseId));
      // another tenant's response does not exist for this one
      if (!chain || (chain.at(-1)!.owner ?? DEFAULT_TENANT) !== tenant) {
        throw notFound(`Previous response with id '${request.previousResponseId}' not found.`, 'previous_response_not_found', 'previous_response_id');
      }
      for (const record of chain) {
        history.push(...(record.inputItems as JsonObject[]), ...(record.response.output as JsonObject[]));
        if (record.callRecords) heldRecords.push(...record.callRecords);
      }
    }
    let conversationLease: string | undefined;
    if (request.conversationId !== null) {
      const conversations = this.options.conversations;
      if (!conversations || (await conversations.ownerOf(request.conversationId)) !== tenant) {
        throw notFound(`Conversation with id '${request.conversationId}' not found.`, 'conversation_not_found', 'conversation');
      }
      // one turn at a time per conversation (as OpenAI): two at once would interleave their items
      if (!options.dryRun) {
        conversationLease = await this.ownership.acquireLease(request.conversationId);
        if (!conversationLease) {
          throw Errors.conversationLocked();
        }
      }
      // read under the lease: the history as no other turn can change it now
      const items = await conversations.items(request.conversationId);
      if (!items) {
        if (conversationLease) await this.ownership.releaseLease(request.conversationId, conversationLease);
        throw notFound(`Conversation with id '${request.conversationId}' not found.`, 'conversation_not_found', 'conversation');
      }
      history.push(...(items as JsonObject[]));
    }
    try {
      return await this.prepareHolding(tenant, request, history, heldRecords, body, signal, conversationLease, options.dryRun === true);
    } catch (err) {
      if (conversationLease) await this.ownership.releaseLease(request.conversationId!, conversationLease);
      throw err;
    }
  }

  private async prepareHolding(tenant: string, request: CreateRequest, history: JsonObject[], heldRecords: GatewayCallRecord[], body: unknown, signal: AbortSignal, conversationLease: string | undefined, dryRun: boolean): Promise<PreparedTurn> {
    const input = await resolveItemReferences(request.input, history, this.store, tenant);
    // tools declared inside the input (tool_search_output) load with their credentials; what is
    // stored and echoed never carries them
    const inputWithCredentials = input.map((item) => normalizeStoredItem(item) as JsonObject);
    const inputItems = inputWithCredentials.map(itemWithoutCredentials);
    checkOutputsPaired(history, inputItems);

    const searchedMcp = inputItems.flatMap((item) => (item.type === 'tool_search_output' && item.execution !== 'server' && Array.isArray(item.tools) ? (item.tools as JsonObject[]) : [])).filter((t) => t?.type === 'mcp').length;
    const mcpCount = request.tools.filter((t) => t.type === 'mcp').length + searchedMcp;
    if (mcpCount > this.options.maxMcpServersPerRequest) {
      throw invalidRequest(`Too many MCP servers: ${mcpCount} declared, at most ${this.options.maxMcpServersPerRequest} allowed.`, 'tools', 'too_many_mcp_servers');
    }

    let registry: ToolRegistry;
    let choice;
    let preludeItems: Item[];
    const declare = { ...this.declare, request: { include: request.include, model: request.model, priorItems: [...history, ...inputItems], tenant } };
    try {
      const discover = { ...declare, priorItems: [...history, ...inputItems], signal };
      preludeItems = await discoverTools(request.tools, discover);
      registry = registerTools(request.tools, declare);
      preludeItems.push(...(await loadSearchedTools(inputWithCredentials, registry, discover)));
      choice = resolveToolChoice(request.toolChoice, registry);
    } catch (err) {
      if (err instanceof ToolDeclarationError) throw invalidRequest(err.message, err.param, err.code);
      throw err;
    }

    const conversation: ModelItem[] = [];
    if (request.instructions) conversation.push({ type: 'message', role: 'system', content: [{ type: 'text', text: request.instructions }] });
    // one pass over history and input: an approval request (history) pairs with its answer (input);
    // a compaction item stands for everything before it
    const effective = applyCompactions([...history, ...inputItems]);
    conversation.push(...toModelItems(effective, registry, await this.callRecordsFor(effective, heldRecords)));

    const turn: PreparedTurn = {
      tenant,
      conversationLease,
      request,
      body,
      registry,
      inputItems: inputItems as Item[],
      conversation,
      base: {
        model: request.model,
        ...(choice.functions.length > 0 ? { parallelToolCalls: request.parallelToolCalls } : {}),
        ...(request.maxOutputTokens !== null ? { maxOutputTokens: request.maxOutputTokens } : {}),
        ...(request.temperature !== null ? { temperature: request.temperature } : {}),
        ...(request.topP !== null ? { topP: request.topP } : {}),
        ...(request.reasoning?.effort ? { reasoningEffort: request.reasoning.effort } : {}),
        ...responseFormatOf(request.text),
      },
      tools: choice.functions,
      toolsFollowRegistry: choice.restricted !== true,
      toolChoice: choice.toolChoice,
      preludeItems,
      approvedCalls: [],
      callRecords: [],
    };
    // the model server is never handed a URL to fetch unless the operator chose so — not for a
    // turn, a compaction or a token count (whose request the upstream may also resolve)
    await this.options.images?.prepare(turn.conversation, signal);
    const contextManagement = dryRun ? null : parseContextManagement((body as JsonObject).context_management);
    if (contextManagement) {
      const auto = await maybeCompact(this.upstream, turn, { threshold: contextManagement.compactThreshold, publicItems: effective, signal, log: this.log });
      if (auto) {
        turn.conversation = auto.conversation;
        turn.autoCompaction = auto;
      }
    }
    // approvals are checked here and used up when the turn runs (useApprovals)
    if (!dryRun) {
      const offered = registry.withLoaded(offeredNames(choice.functions, choice.toolChoice), turn.toolsFollowRegistry === true && turn.toolChoice !== 'none');
      const check = (id: string, digest: string) => this.store.checkApproval(id, digest, tenant);
      for (const gate of APPROVAL_GATES) turn.approvedCalls.push(...(await gate.resolve(history, inputItems, registry, check, offered)));
    }
    return turn;
  }

  /**
   * Runs a prepared turn. `sink` receives the public events (null for blocking). Throws a
   * GatewayError only while nothing has been emitted; after that every failure is a
   * `response.failed` terminal event, and the terminal state is stored before it is announced.
   */
  async run(turn: PreparedTurn, sink: EventSink | null, callerSignal: AbortSignal, drained?: () => Promise<void> | undefined, hooks: RunHooks = {}): Promise<ResponseObject> {
    turn.hooks = hooks;
    const response = hooks.response ?? this.newResponse(turn);
    const acc = new ResponseAccumulator(response, sink);
    // the run's own controller: the caller's abort, a cancellation or a lost ownership stop it
    const controller = hooks.controller ?? new AbortController();
    const forward = () => controller.abort(callerSignal.reason);
    if (callerSignal.aborted) forward();
    else callerSignal.addEventListener('abort', forward, { once: true });
    const signal = controller.signal;
    turn.runController = controller;
    // A background response is already stored as queued: every failure must settle it, so only a
    // foreground turn that has emitted nothing may still fail as a plain HTTP error.
    const mayThrow = hooks.response === undefined;
    try {
      return await this.loop(turn, acc, signal, drained);
    } catch (err) {
      if (acc.finished) return acc.response;
      if (mayThrow && !acc.started && !signal.aborted) throw err;
      // anything that escaped the loop after the start (e.g. a store write) still ends the turn
      return this.fail(acc, turn, err, signal);
    } finally {
      callerSignal.removeEventListener('abort', forward);
      // whatever ended the turn, it holds nothing any more
      this.ownership.untrack(response.id, controller);
      await this.release(turn);
    }
  }

  /** Gives up what a prepared turn holds (its conversation lease); for a turn that will not run. */
  async release(turn: PreparedTurn): Promise<void> {
    const lease = turn.conversationLease;
    if (lease === undefined) return;
    turn.conversationLease = undefined;
    await this.ownership.releaseLease(turn.request.conversationId!, lease);
  }

  private async loop(turn: PreparedTurn, acc: ResponseAccumulator, signal: AbortSignal, drained: (() => Promise<void> | undefined) | undefined): Promise<ResponseObject> {
    const conversation = [...turn.conversation];
    const citations = new CitationBook();
    const emitter = itemEmitter(acc, citations);
    let gatewayCallsMade = 0;
    let startedTools = false;
    // one scheduler for the whole turn: same-name serialization holds across rounds
    const scheduler = new TurnScheduler({ maxConcurrent: this.options.maxConcurrentGatewayCalls });
    /** Runs gateway calls; their results join the conversation (and the turn's call records) for the next round. */
    const runCalls = async (calls: PendingGatewayCall[]) => {
      const outcomes = await scheduler.run(calls, emitter, signal);
      gatewayCallsMade += calls.length;
      // the calls of one round were one assistant turn for the model: replayed together later
      const round = calls[0]?.call.callId;
      calls.forEach((pending, i) => {
        const { callId, modelName, arguments: args } = pending.call;
        conversation.push({ type: 'function_call_output', callId, output: outcomes[i].output });
        const itemId = outcomes[i].itemId;
        if (itemId) turn.callRecords.push({ itemId, callId, name: modelName, arguments: args, output: outcomes[i].output, round });
      });
    };
    /** Once the response has started: the discovered lists, then the calls the client approved. */
    const startTools = async () => {
      startedTools = true;
      for (const item of turn.preludeItems) emitPrelude(acc, item);
      // an approval is used up only now that its call starts, not when the turn was prepared
      if (turn.approvedCalls.length > 0) await runCalls(await useApprovals(turn.approvedCalls, this.store, turn.tenant));
    };

    // Approved calls must have run before the model is asked again: their results are part of
    // round 0's request, so the response starts before the upstream is contacted.
    if (turn.approvedCalls.some((answer) => answer.approve)) {
      await this.begin(acc, turn);
      await startTools();
    }

    for (let round = 0; ; round++) {
      const roundStart = performance.now();
      turn.roundsRun = round + 1;
      const tools = round > 0 && turn.toolsFollowRegistry ? turn.registry.visibleFunctions() : turn.tools;
      const request: ModelRequest = {
        ...turn.base,
        items: conversation,
        tools,
        // a forced choice applies to the first round only, or the loop would force it forever
        toolChoice: round === 0 ? turn.toolChoice : turn.toolChoice === 'none' ? 'none' : tools.length > 0 ? 'auto' : undefined,
      };
      // a refusal here reaches run(): an HTTP error if nothing was emitted yet, else response.failed
      const batches = await openRound(this.upstream, request, round === 0 ? turn.registry : undefined, signal, this.log);
      if (!acc.started) await this.begin(acc, turn);
      if (!startedTools) await startTools();

      // loaded deferred tools are callable though not declared (mode `result`), unless the client narrowed the choice
      const translator = new RoundTranslator(acc, turn.registry, citations, offeredNames(request.tools ?? [], request.toolChoice), request.toolChoice !== 'none' && turn.toolsFollowRegistry === true);
      try {
        for await (const batch of batches) {
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
        translator.finish('incomplete');
        return this.fail(acc, turn, err, signal);
      }

      const upstreamDone = performance.now();
      const result = translator.finish(translator.truncated ? 'incomplete' : 'completed');
      turn.stopSequence = result.stopSequence;
      conversation.push(...result.modelItems);
      if (result.finishReason === 'length' || result.finishReason === 'content_filter') {
        return this.finish(acc, turn, { status: 'incomplete', incompleteReason: result.finishReason === 'length' ? 'max_output_tokens' : 'content_filter' });
      }

      // calls the client must approve first end the turn like client calls (their round's other calls still run)
      let approvalsRequested = 0;
      let calls = result.gatewayCalls.filter((pending) => {
        const execution = pending.entry?.execution;
        if (!execution?.requiresApproval || !pending.entry) return true;
        const args = parseJsonObject(pending.call.arguments);
        if (args === undefined) return true;
        const invocation = { call: pending.call, entry: pending.entry, args };
        if (!execution.requiresApproval(invocation)) return true;
        execution.requestApproval?.(invocation, emitter);
        approvalsRequested++;
        return false;
      });
      await this.recordApprovalRequests(acc, turn, approvalsRequested);
      let capped = false;
      const cap = turn.request.maxToolCalls;
      if (cap !== null && gatewayCallsMade + calls.length > cap) {
        calls = calls.slice(0, Math.max(0, cap - gatewayCallsMade));
        capped = true;
      }
      if (calls.length > 0) await runCalls(calls);
      if (signal.aborted) return this.fail(acc, turn, new Error('aborted'), signal);
      const needsClient = result.clientCalls > 0 || approvalsRequested > 0;
      const roundEnd = performance.now();
      this.options.observer?.round((upstreamDone - roundStart) / 1000, (roundEnd - upstreamDone) / 1000);
      this.log.debug?.(
        { responseId: acc.response.id, round, model: request.model, upstreamMs: Math.round(upstreamDone - roundStart), gatewayMs: Math.round(roundEnd - upstreamDone), gatewayCalls: calls.length, clientCalls: result.clientCalls, approvals: approvalsRequested, finishReason: result.finishReason },
        'round finished',
      );
      if (capped && !needsClient) return this.finish(acc, turn, { status: 'incomplete', incompleteReason: 'max_tool_calls' });

      switch (classifyRound(needsClient, calls.length, round, this.options.maxToolRounds)) {
        case 'continue':
          continue;
        case 'incomplete':
          return this.finish(acc, turn, { status: 'incomplete', incompleteReason: 'max_tool_rounds' });
        case 'done':
        case 'requires_client_action':
          return this.finish(acc, turn, { status: 'completed' });
      }
    }
  }

  /** Starts the public lifecycle; stored responses can be retrieved while they run (in_progress). */
  private async begin(acc: ResponseAccumulator, turn: PreparedTurn): Promise<void> {
    acc.start();
    const auto = turn.autoCompaction;
    if (auto) {
      const index = acc.addItem(auto.item as unknown as Item);
      acc.doneItem(index, auto.item as unknown as Item);
      acc.addUsage(auto.usage.input_tokens, auto.usage.output_tokens, auto.usage.input_tokens_details.cached_tokens, auto.usage.output_tokens_details.reasoning_tokens);
    }
    if (turn.request.store) await this.saveRunning(acc.response, turn);
  }

  /** The approval requests just emitted (the last `count` output items) are bound and remembered. */
  private async recordApprovalRequests(acc: ResponseAccumulator, turn: PreparedTurn, count: number): Promise<void> {
    const output = acc.response.output;
    for (const item of output.slice(output.length - count)) {
      for (const gate of APPROVAL_GATES) {
        const digest = gate.bind(item as JsonObject, turn.registry);
        if (digest !== undefined) await this.store.recordApproval(item.id, digest, turn.tenant);
      }
    }
  }

  /** A new response for this turn (`queued` for a background run, else `in_progress`). */
  newResponse(turn: PreparedTurn): ResponseObject {
    const response = newResponseObject(newId(ID_PREFIX.response), Math.floor(Date.now() / 1000), turn.request);
    if (turn.request.background) response.status = 'queued';
    return response;
  }

  private async fail(acc: ResponseAccumulator, turn: PreparedTurn, err: unknown, signal: AbortSignal): Promise<ResponseObject> {
    if (!acc.started) acc.start();
    if (signal.aborted && signal.reason instanceof RunCancelled) return this.finish(acc, turn, { status: 'cancelled' });
    if (signal.aborted && signal.reason instanceof GatewayShutdown) return this.finish(acc, turn, { status: 'failed', error: { code: 'server_shutting_down', message: signal.reason.message } });
    if (signal.aborted && signal.reason instanceof OwnershipLost) return this.finish(acc, turn, { status: 'failed', error: { code: 'server_error', message: signal.reason.message } });
    if (signal.aborted) {
      return this.finish(acc, turn, { status: 'failed', error: { code: 'client_disconnected', message: 'The client disconnected before the response was complete.' } });
    }
    if (err instanceof GatewayError) turn.failure = err;
    const error = err instanceof GatewayError ? { code: 'server_error', message: err.message } : { code: 'server_error', message: 'The gateway failed while generating the response.' };
    if (!(err instanceof GatewayError) || err instanceof RegistryInvariantError) this.log.error({ err }, 'turn failed');
    else this.log.warn({ code: err.code, message: err.message }, 'turn failed');
    return this.finish(acc, turn, { status: 'failed', error });
  }

  /**
   * Ends the turn: the terminal state, the conversation's new items (only for a turn that did not
   * fail) and, for a background run, the rest of its event log are written in one transaction —
   * all of it, or none and the client hears a retryable failure — before the client hears of it.
   */
  private async finish(acc: ResponseAccumulator, turn: PreparedTurn, state: TerminalState): Promise<ResponseObject> {
    let response = acc.settle(state, Math.floor(Date.now() / 1000));
    const lost = turn.runController?.signal.reason instanceof OwnershipLost;
    // a run another process took over writes nothing: the store already holds what that process settled
    if (lost) turn.failure = settleFailure('not_owner', turn);
    else {
      const outcome = await this.settle(acc, turn, response, state.status !== 'failed' && state.status !== 'cancelled');
      if (outcome !== 'ok') {
        turn.failure = settleFailure(outcome, turn);
        response = acc.settle({ status: 'failed', error: { code: 'server_error', message: turn.failure.message } }, Math.floor(Date.now() / 1000));
        // the failed state without the conversation (best effort: the sweep settles it otherwise)
        if (outcome !== 'not_owner') await this.settle(acc, turn, response, false).catch(() => undefined);
      }
    }
    await this.release(turn);
    turn.hooks?.onSettled?.({ response, inputItems: turn.inputItems, callRecords: turn.callRecords, owner: turn.tenant });
    this.options.observer?.settled(response, turn.roundsRun ?? 0);
    acc.announceTerminal();
    return response;
  }

  /** The model-facing records of the calls in `items`: those held in memory, the rest from the store. */
  private async callRecordsFor(items: readonly JsonObject[], held: readonly GatewayCallRecord[]): Promise<Map<string, GatewayCallRecord>> {
    const records = new Map(held.map((record) => [record.itemId, record]));
    const wanted = items.filter((item) => typeof item.id === 'string' && !records.has(item.id) && handlerForCallItem(String(item.type))).map((item) => item.id as string);
    if (wanted.length > 0) for (const record of await this.store.callRecords(wanted)) records.set(record.itemId, record);
    return records;
  }

  /** Writes a turn's settlement; a store failure is logged and reported as `unavailable`. */
  private async settle(acc: ResponseAccumulator, turn: PreparedTurn, response: ResponseObject, grow: boolean): Promise<SettleOutcome | 'unavailable' | 'unstorable'> {
    const settlement: Settlement = {};
    const conversationId = turn.request.conversationId;
    if (grow && conversationId !== null) {
      // the conversation grows by what this turn added: its input, then its output
      settlement.conversation = { id: conversationId, items: [...turn.inputItems, ...response.output], lease: turn.conversationLease };
    }
    if (turn.request.store) {
      settlement.record = { response, inputItems: turn.inputItems, owner: turn.tenant };
      // a run that could not be registered has no claim to lose (nor one for the sweep to find)
      if (turn.owned || turn.request.background) settlement.owner = this.ownership.owner;
      const terminal = turn.hooks?.unloggedEvents ? acc.terminalEvent() : null;
      if (terminal) settlement.events = [...(await turn.hooks!.unloggedEvents!()), terminal];
    }
    // kept wherever the turn's items are kept (stored response, conversation), never elsewhere
    if (turn.callRecords.length > 0 && (settlement.record || settlement.conversation)) settlement.callRecords = { responseId: response.id, records: turn.callRecords };
    if (settlement.record === undefined && settlement.conversation === undefined) return 'ok';
    try {
      const outcome = await this.store.settle(settlement);
      if (outcome === 'ok') {
        // the settlement released the lease along with the append
        if (settlement.conversation?.lease !== undefined) {
          await this.ownership.releaseLease(conversationId!, settlement.conversation.lease, true);
          turn.conversationLease = undefined;
        }
        if (settlement.events) turn.hooks?.logged?.(settlement.events.at(-1)!.sequence);
      } else {
        this.log.warn({ responseId: response.id, outcome }, 'the turn could not be settled');
      }
      return outcome;
    } catch (err) {
      this.log.error({ err, responseId: response.id }, 'storing the response failed');
      // a value that cannot be serialized (a stack overflow, a cycle) would fail the same way
      // again: never reported as a store outage worth retrying
      return isSerializationFailure(err) ? 'unstorable' : 'unavailable';
    }
  }

  /** Stores a running response under this process's ownership (registered first, for a foreground run). */
  private async saveRunning(response: ResponseObject, turn: PreparedTurn): Promise<void> {
    try {
      if (!turn.request.background && turn.runController) {
        await this.ownership.register(response.id, turn.runController);
        turn.owned = true;
      }
      await this.store.saveOwned({ response, inputItems: turn.inputItems, owner: turn.tenant }, this.ownership.owner);
    } catch (err) {
      // the final settlement decides whether the client hears of a store failure
      this.log.error({ err, responseId: response.id }, 'storing the running response failed');
    }
  }
}

/** Why a turn that was generated is reported as failed: its settlement could not be written. */
/** JSON.stringify's failures: RangeError (nesting too deep for the stack), TypeError (cycles, BigInt). */
function isSerializationFailure(err: unknown): boolean {
  return (err instanceof RangeError || err instanceof TypeError) && !isStoreUnavailable(err);
}

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

/** An item that opens the turn (discovery output): its tool type's lifecycle, else added and done. */
function emitPrelude(acc: ResponseAccumulator, item: Item): void {
  const lifecycle = preludeFor(item.type);
  const index = acc.addItem(lifecycle ? lifecycle.opened(item) : item);
  for (const type of lifecycle?.events ?? []) acc.emit(type, { item_id: item.id, output_index: index });
  acc.doneItem(index, item);
}

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

/** A tool output must answer a call the conversation holds (paired by `call_id`). */
function checkOutputsPaired(history: readonly JsonObject[], input: readonly JsonObject[]): void {
  const callIds = new Set<string>();
  for (const item of history) if (typeof item.call_id === 'string' && item.type !== 'function_call_output' && item.type !== 'custom_tool_call_output') callIds.add(item.call_id);
  input.forEach((item, i) => {
    if (item.type === 'function_call' || item.type === 'custom_tool_call' || item.type === 'tool_search_call') {
      if (typeof item.call_id === 'string') callIds.add(item.call_id);
      return;
    }
    if ((item.type === 'function_call_output' || item.type === 'custom_tool_call_output') && !callIds.has(item.call_id as string)) {
      throw invalidRequest(`No tool call found for ${String(item.type)} with call_id ${String(item.call_id)}.`, `input[${i}]`, 'invalid_value');
    }
  });
}

function responseFormatOf(text: JsonObject): { responseFormat?: ModelResponseFormat } {
  const format = text.format as JsonObject | undefined;
  if (!format || format.type === 'text') return {};
  if (format.type === 'json_object') return { responseFormat: { type: 'json_object' } };
  return {
    responseFormat: {
      type: 'json_schema',
      name: format.name as string,
      schema: format.schema as Record<string, unknown>,
      ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
      ...(typeof format.description === 'string' ? { description: format.description } : {}),
    },
  };
}
