// Intake of a turn (architecture.md §3): the request, its history (previous response or conversation,
// under the conversation's lease), the tools (declared, discovered, loaded by tool_search), the
// model conversation, compaction and approvals. Everything that can fail with a 4xx fails here.
import { Errors, invalidRequest, notFound } from '../errors.js';
import type { ModelItem, ModelRequest, ModelResponseFormat } from '../protocol/model.js';
import type { Item, ResolvedInputItem, TextConfig } from '../protocol/responses.js';
import { DEFAULT_TENANT } from '../store/tenant.js';
import type { GatewayCallRecord } from '../store/store.js';
import { APPROVAL_GATES, checkDeclarations, discovers, discoverTools, handlerForCallItem, itemWithoutCredentials, registerTools, resolveToolChoice, searchedDeclarations, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError, type ApprovedCall } from '../tools/types.js';
import { normalizeStoredItem, normalizeUnstoredItems } from '../util/items.js';
import { applyCompactions, maybeCompact, parseContextManagement } from './compaction.js';
import { heldHistory, heldInputRun, mayJoinRound, namesHold, type HeldModelItems } from './held-history.js';
import { NO_RECORDS } from './unstored-records.js';
import type { CallRecordLookup, PreparedTurn, PrepareOptions } from './types.js';
import { loadSearchedTools, replayStateFor, toModelItems } from './conversation.js';
import { resolveItemReferences } from './item-references.js';
import { checkOutputsPaired } from './output-pairing.js';
import { parseCreateRequest, type CreateRequest } from './request.js';
import { offeredNames } from './round.js';
import { withFields } from '../util/objects.js';
import { EMPTY_LIST, EMPTY_MAP } from '../util/empty.js';
import { itemTypes } from '../util/item-types.js';
import { TurnAbort, type Cancellation } from '../util/abort.js';

import type { EngineContext } from './context.js';

/** A validated turn, ready to run (see PrepareOptions); a held conversation lease is released if it fails. */
export function prepareTurn(ctx: EngineContext, body: unknown, signal: Cancellation = new TurnAbort(), options: PrepareOptions = {}): Promise<PreparedTurn> {
  let request: CreateRequest;
  try {
    request = parseCreateRequest(body);
  } catch (err) {
    return Promise.reject(err);
  }
  const tenant = options.tenant ?? DEFAULT_TENANT;
  // a turn without history (no previous response, no conversation) has nothing to read first
  if (request.previousResponseId === null && request.conversationId === null) {
    return prepareHolding(ctx, tenant, request, { items: [], records: [] }, body, signal, undefined, options.dryRun === true);
  }
  return prepareWithHistory(ctx, request, tenant, body, signal, options);
}

/** `prepareTurn` of a turn that continues a previous response or a conversation: its history read first. */
async function prepareWithHistory(ctx: EngineContext, request: CreateRequest, tenant: string, body: unknown, signal: Cancellation, options: PrepareOptions): Promise<PreparedTurn> {
  let history: Item[] = [];
  /** Model-facing call records the chain carries in memory (a WebSocket connection's cache). */
  let heldRecords: readonly GatewayCallRecord[] = [];
  /** The chain's model items, made once (held-history.ts): only this turn's input is converted. */
  let heldModel: HeldModelItems | undefined;
  if (request.previousResponseId !== null) {
    const chain = (await options.resolvePrevious?.(request.previousResponseId)) ?? (await ctx.store.chain(request.previousResponseId));
    // another tenant's response does not exist for this one
    if (!chain || (chain.at(-1)!.owner ?? DEFAULT_TENANT) !== tenant) {
      throw notFound(`Previous response with id '${request.previousResponseId}' not found.`, 'previous_response_not_found', 'previous_response_id');
    }
    const held = heldHistory(chain);
    history = held.items.slice();
    heldRecords = held.records;
    heldModel = held.model;
  }
  let conversationLease: string | undefined;
  if (request.conversationId !== null) {
    const conversations = ctx.options.conversations;
    if (!conversations || (await conversations.ownerOf(request.conversationId)) !== tenant) {
      throw notFound(`Conversation with id '${request.conversationId}' not found.`, 'conversation_not_found', 'conversation');
    }
    // one turn at a time per conversation (as OpenAI): two at once would interleave their items
    if (!options.dryRun) {
      conversationLease = await ctx.ownership.acquireLease(request.conversationId);
      if (!conversationLease) {
        throw Errors.conversationLocked();
      }
    }
    // read under the lease: the history as no other turn can change it now
    const items = await conversations.items(request.conversationId);
    if (!items) {
      if (conversationLease) await ctx.ownership.releaseLease(request.conversationId, conversationLease);
      throw notFound(`Conversation with id '${request.conversationId}' not found.`, 'conversation_not_found', 'conversation');
    }
    history.push(...items);
    // the conversation's items come after the chain's: the held model items are not all of it
    heldModel = undefined;
  }
  try {
    return await prepareHolding(ctx, tenant, request, { items: history, records: heldRecords, model: heldModel }, body, signal, conversationLease, options.dryRun === true);
  } catch (err) {
    if (conversationLease) await ctx.ownership.releaseLease(request.conversationId!, conversationLease);
    throw err;
  }
}

async function prepareHolding(ctx: EngineContext, tenant: string, request: CreateRequest, held: { items: Item[]; records: readonly GatewayCallRecord[]; model?: HeldModelItems }, body: unknown, signal: Cancellation, conversationLease: string | undefined, dryRun: boolean): Promise<PreparedTurn> {
  const history = held.items;
  const sentTypes = itemTypes(request.input);
  // the common case resolves nothing: no await (each one is a turn of the microtask queue on the way to the upstream)
  const resolving = sentTypes.has('item_reference');
  const input = resolving ? await resolveItemReferences(request.input, history, ctx.store, tenant) : (request.input as ResolvedInputItem[]);
  /** The types of the input's items (normalized below, one for one: the same types). */
  const types = resolving ? itemTypes(input) : sentTypes;
  // tools declared inside the input (tool_search_output) load with their credentials; what is
  // stored and echoed never carries them
  const inputWithCredentials = request.store || request.conversationId !== null ? input.map(normalizeStoredItem) : normalizeUnstoredItems(input);
  const inputItems = types.has('tool_search_output') ? inputWithCredentials.map(itemWithoutCredentials) : inputWithCredentials;
  checkOutputsPaired(history, inputItems, types);

  let registry: ToolRegistry;
  let choice;
  let preludeItems: Item[];
  // history then this turn's input, in order: what the tools look back at and the model is shown
  const priorItems: readonly Item[] = history.length === 0 ? inputItems : [...history, ...inputItems];
  const declare = withFields(ctx.declare, { request: { include: request.include, model: request.model, priorItems, tenant } });
  try {
    checkDeclarations(request.tools, types.has('tool_search_output') ? searchedDeclarations(inputItems) : EMPTY_LIST, declare);
    const discover = withFields(declare, { priorItems, signal });
    preludeItems = request.tools.some(discovers) ? await discoverTools(request.tools, discover) : [];
    registry = registerTools(request.tools, declare);
    if (types.has('tool_search_output')) preludeItems.push(...(await loadSearchedTools(inputWithCredentials, registry, discover)));
    choice = resolveToolChoice(request.toolChoice, registry);
  } catch (err) {
    if (err instanceof ToolDeclarationError) throw invalidRequest(err.message, err.param, err.code);
    throw err;
  }

  let conversation: ModelItem[] = [];
  if (request.instructions) conversation.push({ type: 'message', role: 'system', content: [{ type: 'text', text: request.instructions }] });
  // the input as the client sent it, item for item with `inputItems` (none resolved from the store)
  const sent = input === request.input ? (body as { input?: unknown }).input : undefined;
  const unstored = ctx.options.unstoredRecords?.of(tenant) ?? NO_RECORDS;
  const { model: heldModel, inputHeld } = heldModelItems(held, Array.isArray(sent) ? sent : undefined, inputItems, types, registry, unstored, tenant);
  const effective = heldModel ? priorItems : applyCompactions(priorItems);
  /** Where images fetched over the network may start (held model items were looked at when they were made). */
  let imagesFrom = 0;
  if (heldModel) {
    // the history's model items as held; the input converted after them (the history is context-free
    // and its namespaced calls are named as this turn's tools name them)
    conversation = conversation.concat(heldModel.items);
    if (!heldModel.remoteImages) imagesFrom = conversation.length;
    // after them as in one pass: an answer in the input pairs with an approval request they hold
    const rest = inputHeld === 0 ? inputItems : inputItems.slice(inputHeld);
    const records = callRecordsFor(ctx, rest, held.records, unstored, tenant);
    conversation.push(...toModelItems(rest, registry, records instanceof Promise ? await records : records, replayStateFor(rest, heldModel.replay)));
  } else {
    // one pass over history and input: an approval request (history) pairs with its answer (input)
    const records = callRecordsFor(ctx, effective, held.records, unstored, tenant);
    conversation.push(...toModelItems(effective, registry, records instanceof Promise ? await records : records));
  }

  // the settings the client gave, each key only when set (assigned: spreads after a key take V8's slow path)
  const base: Omit<ModelRequest, 'items' | 'tools' | 'toolChoice'> = { model: request.model };
  if (choice.functions.length > 0) base.parallelToolCalls = request.parallelToolCalls;
  if (request.maxOutputTokens !== null) base.maxOutputTokens = request.maxOutputTokens;
  if (request.temperature !== null) base.temperature = request.temperature;
  if (request.topP !== null) base.topP = request.topP;
  if (request.reasoning?.effort) base.reasoningEffort = request.reasoning.effort;
  const responseFormat = responseFormatOf(request.text);
  if (responseFormat) base.responseFormat = responseFormat;
  const toolsFollowRegistry = choice.restricted !== true;
  // the model server is never handed a URL to fetch unless the operator chose so — not for a
  // turn, a compaction or a token count (whose request the upstream may also resolve)
  const inlining = ctx.options.images?.prepare(conversation, signal, imagesFrom);
  if (inlining) await inlining;
  const contextManagement = dryRun ? null : parseContextManagement((body as { context_management?: unknown }).context_management);
  const autoCompaction = contextManagement
    ? await maybeCompact(ctx.upstream, { request, conversation, tools: choice.functions, base }, { threshold: contextManagement.compactThreshold, publicItems: effective, signal, log: ctx.log })
    : undefined;
  // approvals are checked here and used up when the turn runs (useApprovals)
  const approvedCalls: ApprovedCall[] = [];
  // a gate resolves answers: without one in the input there is nothing to check (nor a promise to wait for)
  const answered = dryRun ? [] : APPROVAL_GATES.filter((gate) => types.has(gate.answerItemType));
  if (answered.length > 0) {
    const offered = registry.withLoaded(offeredNames(choice.functions, choice.toolChoice), toolsFollowRegistry && choice.toolChoice !== 'none');
    const check = (id: string, digest: string) => ctx.store.checkApproval(id, digest, tenant);
    for (const gate of answered) approvedCalls.push(...(await gate.resolve(history, inputItems, registry, check, offered)));
  }
  const turn: PreparedTurn = {
    tenant,
    conversationLease,
    request,
    body,
    registry,
    history,
    inputItems,
    conversation: autoCompaction?.conversation ?? conversation,
    base,
    tools: choice.functions,
    toolsFollowRegistry,
    toolChoice: choice.toolChoice,
    preludeItems,
    approvedCalls,
  };
  return autoCompaction ? { ...turn, autoCompaction } : turn;
}

/**
 * The model items made once for what comes before this turn's new items, when they can stand for
 * it (else none): a chain's (`held.model`), or — a history the client resends whole — those of
 * the input's leading shared items (`inputHeld` of them). Either stands only when nothing in the
 * input drops what comes before it (a compaction item), the next item cannot belong to a round
 * of calls they end with, and their namespaced calls are named as this turn's tools name them.
 */
function heldModelItems(held: { items: readonly Item[]; model?: HeldModelItems }, sent: readonly unknown[] | undefined, inputItems: readonly Item[], types: ReadonlySet<string>, registry: ToolRegistry, unstored: CallRecordLookup, tenant: string): { model?: HeldModelItems; inputHeld: number } {
  let found: { model: HeldModelItems; inputHeld: number } | undefined;
  if (held.model !== undefined) {
    if (!mayJoinRound(held.items.at(-1), inputItems[0])) found = { model: held.model, inputHeld: 0 };
  } else if (held.items.length === 0 && sent !== undefined) {
    const run = heldInputRun(sent, inputItems, unstored, tenant, types);
    if (run !== undefined) found = { model: run.model, inputHeld: run.length };
  }
  return found !== undefined && !types.has('compaction') && namesHold(found.model, registry) ? found : NONE_HELD;
}
const NONE_HELD = { inputHeld: 0 };

/**
 * The model-facing records of the calls in `items`: those held in memory (the chain's, then those
 * of turns not stored), the rest from the store (only then a promise: the common turn has nothing
 * to look up and takes no microtask turn).
 */
function callRecordsFor(ctx: EngineContext, items: readonly Item[], held: readonly GatewayCallRecord[], unstored: CallRecordLookup, tenant: string): ReadonlyMap<string, GatewayCallRecord> | Promise<ReadonlyMap<string, GatewayCallRecord>> {
  const calls = items.filter((item) => handlerForCallItem(item.type) !== undefined);
  // a held history's records are looked through only when there are calls to find (a continued
  // turn's input seldom holds one)
  if (calls.length === 0) return EMPTY_MAP;
  const records = new Map(held.map((record) => [record.itemId, record]));
  for (const call of calls) {
    const record = records.has(call.id) ? undefined : unstored.get(call.id);
    if (record !== undefined) records.set(call.id, record);
  }
  const wanted = calls.filter((item) => !records.has(item.id)).map((item) => item.id);
  if (wanted.length === 0) return records;
  return ctx.store.callRecords(wanted, tenant).then((stored) => {
    for (const record of stored) records.set(record.itemId, record);
    return records;
  });
}

/** The request's `text.format` in the model's terms. */
function responseFormatOf(text: TextConfig): ModelResponseFormat | undefined {
  const format = text.format;
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    name: format.name,
    schema: format.schema,
    ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
    ...(typeof format.description === 'string' ? { description: format.description } : {}),
  };
}
