import { invalidRequest } from '../errors.js';
import type { ModelItem, ModelPart } from '../protocol/model.js';
import type { Item, MessageContentPart, ReasoningItem } from '../protocol/responses.js';
import { compactionToModelItem } from './compaction.js';
import type { GatewayCallRecord } from '../store/store.js';
import type { DiscoverContext, ReplayContext, ToolHandler } from '../tools/handler.js';
import { APPROVAL_ITEMS, discoverTools, handlerForCallItem, handlerForReplayItem, parseTools, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError } from '../tools/types.js';
import { deepFreeze, madeOnce } from '../util/freeze.js';
import { NO_RECORDS } from './unstored-records.js';
import type { CallRecordLookup } from './types.js';

/**
 * Public items (history + this turn's input) → the neutral model conversation. Messages,
 * reasoning and compactions are the engine's own; every tool type's items replay through its
 * handler (`replay`: client calls under the names the model saw, outputs paired by `call_id`,
 * never by position; answered approvals as the model's call). Gateway-executed calls
 * are replayed from their model-facing records (`records`, by item id) exactly as the model first
 * saw them; without a record, their tool type rebuilds what its public item holds, and the model is
 * told when the result itself is gone.
 */
export function toModelItems(items: readonly Item[], registry: ToolRegistry, records: CallRecordLookup = NO_RECORDS, state: ReplayState = newReplayState()): ModelItem[] {
  const out: ModelItem[] = [];
  // Outputs of consecutive gateway calls of one round follow all of that round's calls, as the
  // model saw parallel calls: the calls, then their results. Calls of different rounds (or whose
  // round is not known) each come with their own result.
  const pendingOutputs: ModelItem[] = [];
  let pendingRound: string | undefined;
  const flushOutputs = () => {
    if (pendingOutputs.length === 0) return;
    for (const output of pendingOutputs) out.push(output);
    pendingOutputs.length = 0;
  };
  const { answeredApprovals } = state;
  const ctx: ReplayContext = {
    declaredName: (type, name, namespace) => declaredName(registry, type, name, namespace),
    approvalRequests: state.approvalRequests,
    answeredApprovals,
    registry,
  };
  for (const item of items) {
    const gatewayCall = handlerForCallItem(item.type);
    if (gatewayCall) {
      const record = records.get(item.id);
      if (record?.round === undefined || record.round !== pendingRound) flushOutputs();
      pendingRound = record?.round;
      replayGatewayCall(item, gatewayCall, record, answeredApprovals, out, pendingOutputs);
      continue;
    }
    flushOutputs();
    switch (item.type) {
      case 'message':
      case 'reasoning':
      case 'compaction':
        // a long history walks here once per item per turn: no spread, no array per item
        for (const modelItem of convertedOnce(item, engineItemToModel)) out.push(modelItem);
        break;
      default: {
        // a tool type's own items (client calls and outputs, approvals) replay through its
        // handler; items nobody replays (hosted-call bookkeeping) carry no model-visible turn
        const replayed = handlerForReplayItem(item.type)?.replay?.(item, ctx) ?? [];
        out.push(...sameAsBefore(item, replayed));
        break;
      }
    }
  }
  flushOutputs();
  return out;
}

/**
 * What a rebuild carries from item to item: the approval requests it met and those whose answer
 * it replayed. Items before `items` that were converted apart (a held history) pass theirs on;
 * only approval requests and answers change it.
 */
export interface ReplayState {
  readonly approvalRequests: Map<string, Item>;
  readonly answeredApprovals: Set<string>;
}

export function newReplayState(): ReplayState {
  return { approvalRequests: new Map(), answeredApprovals: new Set() };
}

/** The replay state to convert `items` with after items converted apart: a copy when they may change it (they hold approvals), else `after` itself. */
export function replayStateFor(items: readonly Item[], after: ReplayState): ReplayState {
  if (!items.some((item) => APPROVAL_ITEMS.has(item.type))) return after;
  return { approvalRequests: new Map(after.approvalRequests), answeredApprovals: new Set(after.answeredApprovals) };
}

/** A message, reasoning or compaction item in the model's terms (none when it carries nothing). */
function engineItemToModel(item: Item): ModelItem[] {
  switch (item.type) {
    case 'message':
      return [{ type: 'message', role: item.role, content: toModelParts(item.content) }];
    case 'reasoning': {
      const text = reasoningText(item);
      return text ? [{ type: 'reasoning', text }] : [];
    }
    default: {
      // a summary this gateway made stands for the conversation before it
      const summary = compactionToModelItem(item);
      return summary ? [summary] : [];
    }
  }
}

/**
 * The model items of stored history items, kept per item. A chain's records come frozen from the
 * store's chain cache and are the same objects turn after turn: converting each once, and handing
 * the upstream encoder the same frozen model items, lets it keep their serialisation too (issue
 * 16: a continued turn's cost must not grow with the chain). Unfrozen items (this turn's input)
 * are converted every time.
 */
const modelItemsOf = new WeakMap<object, readonly ModelItem[]>();

function convertedOnce(item: Item, convert: (item: Item) => ModelItem[]): readonly ModelItem[] {
  return madeOnce(modelItemsOf, item, convert, undefined);
}

/**
 * A tool type's replay of a stored item depends on the request (the names its tools have now), so
 * it runs every turn; when it gives what it gave last time, last time's frozen objects are used.
 */
function sameAsBefore(item: Item, replayed: ModelItem[]): readonly ModelItem[] {
  if (!Object.isFrozen(item)) return replayed;
  const before = modelItemsOf.get(item);
  if (before !== undefined && before.length === replayed.length && before.every((b, i) => sameFields(b, replayed[i]))) return before;
  const frozen = deepFreeze(replayed);
  modelItemsOf.set(item, frozen);
  return frozen;
}

/** Shallow equality of two model items whose fields are strings (calls and outputs); messages never match. */
function sameFields(a: ModelItem, b: ModelItem): boolean {
  if (a.type !== b.type || a.type === 'message') return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  return keysA.every((key) => (a as unknown as Record<string, unknown>)[key] === (b as unknown as Record<string, unknown>)[key]);
}

/** Replays one gateway call: its call into `out`, its result into `outputs` (see toModelItems). */
function replayGatewayCall(item: Item, handler: ToolHandler<any>, record: GatewayCallRecord | undefined, answeredApprovals: ReadonlySet<string>, out: ModelItem[], outputs: ModelItem[]): void {
  // a call the client approved was already replayed from its approval: only its result follows
  const approvalId = typeof item.approval_request_id === 'string' && answeredApprovals.has(item.approval_request_id) ? item.approval_request_id : undefined;
  if (record) {
    if (!approvalId) out.push({ type: 'function_call', callId: record.callId, name: record.name, arguments: record.arguments });
    outputs.push({ type: 'function_call_output', callId: approvalId ?? record.callId, output: record.output });
    return;
  }
  const rebuilt = handler.replayCall?.(item) ?? { name: item.type, arguments: '{}' };
  const callId = approvalId ?? item.id;
  if (!approvalId) out.push({ type: 'function_call', callId, name: rebuilt.name, arguments: rebuilt.arguments });
  outputs.push({ type: 'function_call_output', callId, output: rebuilt.output ?? unavailableResult(item.type) });
}

/** What the model is told when a gateway call's result is no longer held (e.g. a `store: false` turn). */
function unavailableResult(itemType: string): string {
  return `[The result of this ${itemType} is no longer available: the gateway did not keep it (the turn was not stored). Call the tool again if you need it.]`;
}

/**
 * `tool_search_output` items make the tools they carry visible to the model (architecture.md §2).
 * Tools that discover what they offer (MCP servers) are listed as declared tools are; returns the
 * items that discovery produced (`mcp_list_tools`). `items` must still carry the credentials.
 */
export async function loadSearchedTools(items: readonly Item[], registry: ToolRegistry, ctx: DiscoverContext): Promise<Item[]> {
  const discovered: Item[] = [];
  for (const [i, item] of items.entries()) {
    // a hosted search's output names tools the request declares (markSearchedTools), not new ones
    if (item.type !== 'tool_search_output' || !Array.isArray(item.tools) || item.execution === 'server') continue;
    const param = `input[${i}].tools`;
    try {
      const parsed = parseTools(item.tools, param);
      discovered.push(...(await discoverTools(parsed, ctx)));
      for (const tool of parsed) {
        if (!tool.handler) continue;
        for (const entry of tool.handler.normalize(tool.declaration, tool.param, ctx)) {
          const existing = registry.lookup(entry.modelName);
          if (existing && existing.identity.type === entry.identity.type && existing.identity.name === entry.identity.name && existing.identity.namespace === entry.identity.namespace) {
            registry.markLoaded(entry.modelName);
          } else {
            registry.add({ ...entry, deferred: false });
          }
        }
      }
    } catch (err) {
      if (err instanceof ToolDeclarationError) throw invalidRequest(err.message, err.param, err.code);
      throw err;
    }
  }
  return discovered;
}

/** The model-visible name of a declared client tool of this request, by its public identity. */
function declaredName(registry: ToolRegistry, type: string, name: string, namespace: string): string | undefined {
  for (const entry of registry.all()) {
    if (entry.identity.type === type && entry.identity.name === name && entry.identity.namespace === namespace) return entry.modelName;
  }
  return undefined;
}

function toModelParts(content: readonly MessageContentPart[]): ModelPart[] {
  const parts: ModelPart[] = [];
  for (const part of content) {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
      case 'summary_text':
      case 'reasoning_text':
        parts.push({ type: 'text', text: part.text });
        break;
      case 'refusal':
        parts.push({ type: 'text', text: String(part.refusal ?? '') });
        break;
      case 'input_image': {
        const url = typeof part.image_url === 'string' ? part.image_url : undefined;
        if (url) parts.push({ type: 'image', url, ...(typeof part.detail === 'string' && part.detail !== 'auto' ? { detail: part.detail } : {}) });
        break;
      }
      case 'input_file':
        parts.push({ type: 'text', text: `[file: ${String(part.filename ?? part.file_id ?? part.file_url ?? 'attachment')}]` });
        break;
    }
  }
  return parts;
}

function reasoningText(item: ReasoningItem): string {
  // parts are read defensively: a client's reasoning item may carry parts of other shapes
  const text = (item.content ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  if (text) return text;
  return (item.summary ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}
