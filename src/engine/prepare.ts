// Intake of a turn (architecture.md §3): the request, its history (previous response or conversation,
// under the conversation's lease), the tools (declared, discovered, loaded by tool_search), the
// model conversation, compaction and approvals. Everything that can fail with a 4xx fails here.
import { Errors, invalidRequest, notFound } from '../errors.js';
import type { ModelItem, ModelResponseFormat } from '../protocol/model.js';
import type { Item, TextConfig } from '../protocol/responses.js';
import { DEFAULT_TENANT } from '../store/tenant.js';
import type { GatewayCallRecord, StoredResponse } from '../store/store.js';
import { APPROVAL_GATES, CLIENT_CALL_ITEMS, CLIENT_OUTPUT_ITEMS, checkDeclarations, discoverTools, handlerForCallItem, itemWithoutCredentials, registerTools, resolveToolChoice, searchedDeclarations, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError, type ApprovedCall } from '../tools/types.js';
import { normalizeStoredItem } from '../util/items.js';
import { applyCompactions, maybeCompact, parseContextManagement } from './compaction.js';
import type { PreparedTurn, PrepareOptions } from './types.js';
import { loadSearchedTools, toModelItems } from './conversation.js';
import { resolveItemReferences } from './item-references.js';
import { parseCreateRequest, type CreateRequest } from './request.js';
import { offeredNames } from './round.js';
import { withFields } from '../util/objects.js';
import { TurnAbort, type Cancellation } from '../util/abort.js';

import type { EngineContext } from './context.js';

/** A validated turn, ready to run (see PrepareOptions); a held conversation lease is released if it fails. */
export async function prepareTurn(ctx: EngineContext, body: unknown, signal: Cancellation = new TurnAbort(), options: PrepareOptions = {}): Promise<PreparedTurn> {
  const request = parseCreateRequest(body);
  const tenant = options.tenant ?? DEFAULT_TENANT;
  let history: Item[] = [];
  /** Model-facing call records the chain carries in memory (a WebSocket connection's cache). */
  let heldRecords: GatewayCallRecord[] = [];
  if (request.previousResponseId !== null) {
    const chain = (await options.resolvePrevious?.(request.previousResponseId)) ?? (await ctx.store.chain(request.previousResponseId));
    // another tenant's response does not exist for this one
    if (!chain || (chain.at(-1)!.owner ?? DEFAULT_TENANT) !== tenant) {
      throw notFound(`Previous response with id '${request.previousResponseId}' not found.`, 'previous_response_not_found', 'previous_response_id');
    }
    ({ history, heldRecords } = chainHistory(chain));
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
  }
  try {
    return await prepareHolding(ctx, tenant, request, history, heldRecords, body, signal, conversationLease, options.dryRun === true);
  } catch (err) {
    if (conversationLease) await ctx.ownership.releaseLease(request.conversationId!, conversationLease);
    throw err;
  }
}

async function prepareHolding(ctx: EngineContext, tenant: string, request: CreateRequest, history: Item[], heldRecords: GatewayCallRecord[], body: unknown, signal: Cancellation, conversationLease: string | undefined, dryRun: boolean): Promise<PreparedTurn> {
  const input = await resolveItemReferences(request.input, history, ctx.store, tenant);
  // tools declared inside the input (tool_search_output) load with their credentials; what is
  // stored and echoed never carries them
  const inputWithCredentials = input.map(normalizeStoredItem);
  const inputItems = inputWithCredentials.map(itemWithoutCredentials);
  checkOutputsPaired(history, inputItems);

  let registry: ToolRegistry;
  let choice;
  let preludeItems: Item[];
  // history then this turn's input, in order: what the tools look back at and the model is shown
  const priorItems: readonly Item[] = [...history, ...inputItems];
  const declare = withFields(ctx.declare, { request: { include: request.include, model: request.model, priorItems, tenant } });
  try {
    checkDeclarations(request.tools, searchedDeclarations(inputItems), declare);
    const discover = withFields(declare, { priorItems, signal });
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
  const effective = applyCompactions(priorItems);
  conversation.push(...toModelItems(effective, registry, await callRecordsFor(ctx, effective, heldRecords, tenant)));

  const base = {
    model: request.model,
    ...(choice.functions.length > 0 ? { parallelToolCalls: request.parallelToolCalls } : {}),
    ...(request.maxOutputTokens !== null ? { maxOutputTokens: request.maxOutputTokens } : {}),
    ...(request.temperature !== null ? { temperature: request.temperature } : {}),
    ...(request.topP !== null ? { topP: request.topP } : {}),
    ...(request.reasoning?.effort ? { reasoningEffort: request.reasoning.effort } : {}),
    ...responseFormatOf(request.text),
  };
  const toolsFollowRegistry = choice.restricted !== true;
  // the model server is never handed a URL to fetch unless the operator chose so — not for a
  // turn, a compaction or a token count (whose request the upstream may also resolve)
  await ctx.options.images?.prepare(conversation, signal);
  const contextManagement = dryRun ? null : parseContextManagement((body as { context_management?: unknown }).context_management);
  const autoCompaction = contextManagement
    ? await maybeCompact(ctx.upstream, { request, conversation, tools: choice.functions, base }, { threshold: contextManagement.compactThreshold, publicItems: effective, signal, log: ctx.log })
    : undefined;
  // approvals are checked here and used up when the turn runs (useApprovals)
  const approvedCalls: ApprovedCall[] = [];
  if (!dryRun) {
    const offered = registry.withLoaded(offeredNames(choice.functions, choice.toolChoice), toolsFollowRegistry && choice.toolChoice !== 'none');
    const check = (id: string, digest: string) => ctx.store.checkApproval(id, digest, tenant);
    for (const gate of APPROVAL_GATES) approvedCalls.push(...(await gate.resolve(history, inputItems, registry, check, offered)));
  }
  return {
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
    ...(autoCompaction ? { autoCompaction } : {}),
  };
}

interface FlatChain {
  items: readonly Item[];
  records: readonly GatewayCallRecord[];
}
/**
 * Held chains flattened, by their last record. The store's chain cache holds each record once and
 * extends a held chain by the record just settled, so the next turn's chain is the last one plus
 * one record: its flattening is the last one's plus that record's items (a copy of the array, not
 * a walk of every record), and a conversation's cost per turn does not grow with its length.
 */
const flattenedChains = new WeakMap<StoredResponse, FlatChain>();

/** The history a chain makes (its records' input and output, in order), as the caller's own arrays. */
function chainHistory(chain: readonly StoredResponse[]): { history: Item[]; heldRecords: GatewayCallRecord[] } {
  const tip = chain.at(-1)!;
  // only held records (frozen, never changed, always after the same records) are kept
  const held = Object.isFrozen(tip);
  let flat = held ? flattenedChains.get(tip) : undefined;
  if (flat === undefined) {
    const parent = held && chain.length > 1 ? flattenedChains.get(chain.at(-2)!) : undefined;
    flat = parent ? withTip(parent, tip) : flatten(chain);
    if (held) flattenedChains.set(tip, flat);
  }
  return { history: flat.items.slice(), heldRecords: flat.records.slice() };
}

function flatten(chain: readonly StoredResponse[]): FlatChain {
  const items: Item[] = [];
  const records: GatewayCallRecord[] = [];
  for (const record of chain) {
    for (const item of record.inputItems) items.push(item);
    for (const item of record.response.output) items.push(item);
    if (record.callRecords) for (const callRecord of record.callRecords) records.push(callRecord);
  }
  return { items, records };
}

function withTip(parent: FlatChain, tip: StoredResponse): FlatChain {
  return {
    items: parent.items.concat(tip.inputItems, tip.response.output),
    records: tip.callRecords && tip.callRecords.length > 0 ? parent.records.concat(tip.callRecords) : parent.records,
  };
}

/** The model-facing records of the calls in `items`: those held in memory, the rest from the store. */
async function callRecordsFor(ctx: EngineContext, items: readonly Item[], held: readonly GatewayCallRecord[], tenant: string): Promise<Map<string, GatewayCallRecord>> {
  const records = new Map(held.map((record) => [record.itemId, record]));
  const wanted = items.filter((item) => handlerForCallItem(item.type) !== undefined && !records.has(item.id)).map((item) => item.id);
  if (wanted.length > 0) for (const record of await ctx.store.callRecords(wanted, tenant)) records.set(record.itemId, record);
  return records;
}

/** A tool output must answer a call the conversation holds (paired by `call_id`). */
function checkOutputsPaired(history: readonly Item[], input: readonly Item[]): void {
  // the history's calls are collected only when there is an output to pair (a long chain, once)
  if (!input.some((item) => CLIENT_OUTPUT_ITEMS.has(item.type))) return;
  const callIds = new Set<string>();
  for (const item of history) if (typeof item.call_id === 'string' && !CLIENT_OUTPUT_ITEMS.has(item.type)) callIds.add(item.call_id);
  input.forEach((item, i) => {
    const callId = typeof item.call_id === 'string' ? item.call_id : undefined;
    if (CLIENT_CALL_ITEMS.has(item.type)) {
      if (callId !== undefined) callIds.add(callId);
      return;
    }
    if (CLIENT_OUTPUT_ITEMS.has(item.type) && (callId === undefined || !callIds.has(callId))) {
      throw invalidRequest(`No tool call found for ${item.type} with call_id ${String(item.call_id)}.`, `input[${i}]`, 'invalid_value');
    }
  });
}

/** The request's `text.format` in the model's terms. */
function responseFormatOf(text: TextConfig): { responseFormat?: ModelResponseFormat } {
  const format = text.format;
  if (format.type === 'text') return {};
  if (format.type === 'json_object') return { responseFormat: { type: 'json_object' } };
  return {
    responseFormat: {
      type: 'json_schema',
      name: format.name,
      schema: format.schema,
      ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
      ...(typeof format.description === 'string' ? { description: format.description } : {}),
    },
  };
}
