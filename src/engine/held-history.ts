// The history of a turn continued from a held `previous_response_id` chain, made once per chain
// tip from its parent's (issue 16: a continued turn's cost must not grow with its conversation).
import type { ModelItem } from '../protocol/model.js';
import type { Item } from '../protocol/responses.js';
import { holdsRemoteImage } from '../net/image-inline.js';
import type { GatewayCallRecord, StoredResponse } from '../store/store.js';
import { flattenedName } from '../tools/names.js';
import { APPROVAL_ITEMS, handlerForCallItem, preludeFor, ToolRegistry } from '../tools/registry.js';
import { newReplayState, replayStateFor, toModelItems, type ReplayState } from './conversation.js';
import { deepFreezeEach } from '../util/freeze.js';
import { itemTypes } from '../util/item-types.js';
import { KeptRuns, sharedLength, TURNS_LOOKBACK } from '../util/kept-runs.js';
import type { CallRecordLookup } from './types.js';

export interface HeldHistory {
  /** The chain's public items (each record's input, then its output), in order. */
  items: readonly Item[];
  /** The model-facing records of the chain's gateway calls that its records carry. */
  records: readonly GatewayCallRecord[];
  /** The model items of `items`, when they are context-free (see `contextFree`); undefined otherwise. */
  model?: HeldModelItems;
}

export interface HeldModelItems {
  /** Frozen, and the same objects every turn (their chat messages and bytes are kept downstream). */
  items: readonly ModelItem[];
  /** Whether one of them holds an image fetched over the network (looked at again every turn). */
  remoteImages: boolean;
  /**
   * The namespaced client tools whose calls they hold, by identity key (`nameKey`), each under
   * the name it was replayed with: its flattened name. A turn whose registry declares one of them
   * under another name (`namesHold`) converts the whole history instead.
   */
  namespaced: ReadonlyMap<string, NamespacedName>;
  /**
   * What converting them left for the items after them: approval requests met and answered.
   * Changed by no one (a conversion that meets approvals is given a copy).
   */
  replay: ReplayState;
  /**
   * The owner (tenant) whose records of turns not stored they replay, if any: only that owner's
   * requests may use them (the items of a resent history are shared by identical bytes).
   */
  owner?: string;
}

/** A namespaced client tool as a held call names it. */
export interface NamespacedName {
  type: string;
  name: string;
  namespace: string;
  modelName: string;
}

/**
 * Held histories by their chain's last record. The store's chain cache holds each record once and
 * extends a held chain by the record just settled, so the next turn's chain is the last one plus
 * one record: its history is the last one's plus that record's items — a copy of two arrays, not
 * a walk of every item — and its model items the last one's plus that record's, converted (and
 * the last one's is let go). Only held records (frozen: never changed, always after the same
 * records) are kept.
 */
const heldHistories = new WeakMap<StoredResponse, HeldHistory>();

/** The history a chain makes. Its arrays are shared: a caller copies what it changes. */
export function heldHistory(chain: readonly StoredResponse[]): HeldHistory {
  const tip = chain.at(-1)!;
  const held = Object.isFrozen(tip);
  let history = held ? heldHistories.get(tip) : undefined;
  if (history === undefined) {
    const parent = held && chain.length > 1 ? heldHistories.get(chain.at(-2)!) : undefined;
    history = parent ? extended(parent, [tip]) : extended(NOTHING_YET, chain);
    if (held) heldHistories.set(tip, history);
    // a conversation keeps one held history, its newest: one per record would keep Σ depth items
    // alive for a long chain (a turn continued again from an earlier response builds its own anew)
    if (parent) heldHistories.delete(chain.at(-2)!);
  }
  return history;
}

/** The history before a chain's first record. */
const NOTHING_YET: HeldHistory = { items: [], records: [], model: { items: [], remoteImages: false, namespaced: new Map(), replay: newReplayState() } };

/** `history` followed by `records`. */
function extended(history: HeldHistory, records: readonly StoredResponse[]): HeldHistory {
  const added: Item[] = [];
  const callRecords: GatewayCallRecord[] = [];
  for (const record of records) {
    for (const item of record.inputItems) added.push(item);
    for (const item of record.response.output) added.push(item);
    if (record.callRecords) for (const callRecord of record.callRecords) callRecords.push(callRecord);
  }
  return {
    items: history.items.concat(added),
    records: callRecords.length > 0 ? history.records.concat(callRecords) : history.records,
    model: history.model && !mayJoinRound(history.items.at(-1), added[0]) ? withModelItems(history.model, added, callRecords) : undefined,
  };
}

/**
 * Whether the gateway calls on both sides of a boundary might be one round (the calls of a round
 * are replayed together, then their results): only a conversion of both sides in one pass groups
 * them as the model saw them.
 */
export function mayJoinRound(before: Item | undefined, after: Item | undefined): boolean {
  return before !== undefined && after !== undefined && handlerForCallItem(before.type) !== undefined && handlerForCallItem(after.type) !== undefined;
}

/** Below this many shared items, converting them again costs less than keeping their model items. */
const MIN_HELD_RUN = 16;
/**
 * The model items of a history a client resends whole with every request (Codex over HTTP with
 * `store: false`). Its items reach a turn as the same frozen objects every time (http/json.ts keeps
 * a resent history parsed), so, as for a chain, their model items are made once and extended by
 * what each turn adds: kept by the last of them, found again by comparing the request's leading
 * frozen items with the kept ones (references), a few turns back at most. What validating and
 * storing them adds (a message's `type`, an id minted for an item without one) is no part of
 * what the model sees: the items are known by the objects the client sent (util/kept-runs.ts).
 */
const heldRuns = new KeptRuns<HeldModelItems>(TURNS_LOOKBACK);

/**
 * The held model items of a request's leading shared items, and how many they are: `sent` is the
 * request's `input` as parsed (shared items are frozen), `items` the same items as the turn has
 * them (validated and normalized, one for one). A hosted call the gateway ran is replayed from
 * `owner`'s records of turns not stored (`unstored`); the run ends before the first item that is
 * not context-free — such a call whose record is not held here (another replica's, expired) is
 * converted with what follows it, every turn — and is undefined when that leaves too few. It
 * never ends inside a round of calls (replayed together: the calls, then their results); the
 * caller checks the names of namespaced calls, as for a chain. `types`: those of `items`, when
 * the caller has them (`util/item-types.ts`).
 */
export function heldInputRun(sent: readonly unknown[], items: readonly Item[], unstored: CallRecordLookup, owner: string, types = itemTypes(items)): { length: number; model: HeldModelItems } | undefined {
  const shared = sharedLength(sent);
  // items of types that are context-free whatever they hold are not looked at one by one
  let end = 0;
  if (everyType(types, contextFreeType)) end = shared;
  else while (end < shared && contextFree(items[end], unstored)) end++;
  while (end > 0 && mayJoinRound(items[end - 1], items[end])) end--;
  if (end < MIN_HELD_RUN) return undefined;
  let run = heldRuns.find(sent, end);
  // another owner's run is made anew, as is one that a round of calls may go on from
  if (run !== undefined && ((run.value.owner !== undefined && run.value.owner !== owner) || mayJoinRound(items[run.items.length - 1], items[run.items.length]))) run = undefined;
  if (run !== undefined && run.items.length === end) return { length: end, model: run.value };
  const model = run === undefined ? appended(NOTHING_YET.model!, items.slice(0, end), unstored, owner) : appended(run.value, items.slice(run.items.length, end), unstored, owner);
  heldRuns.keep(sent.slice(0, end), model, run);
  return { length: end, model };
}

/** `model` followed by the model items of `added`, or undefined when one of them is not context-free. */
function withModelItems(model: HeldModelItems, added: readonly Item[], callRecords: readonly GatewayCallRecord[]): HeldModelItems | undefined {
  const recorded = new Map(callRecords.map((record) => [record.itemId, record]));
  return added.every((item) => contextFree(item, recorded)) ? appended(model, added, recorded) : undefined;
}

/**
 * `model` followed by the model items of `added`, all of them context-free; `unstoredOwner`: the
 * owner of the records of turns not stored that `recorded` holds, if it holds those.
 */
function appended(model: HeldModelItems, added: readonly Item[], recorded: CallRecordLookup, unstoredOwner?: string): HeldModelItems {
  /** A copy of the parent's, made once a namespaced tool it does not hold appears (rare). */
  let namespaced: Map<string, NamespacedName> | undefined;
  for (const item of added) {
    const assumed = namespacedName(item);
    if (assumed === undefined) continue;
    const key = nameKey(assumed.type, assumed.namespace, assumed.name);
    if ((namespaced ?? model.namespaced).has(key)) continue;
    namespaced ??= new Map(model.namespaced);
    namespaced.set(key, assumed);
  }
  const replay = replayStateFor(added, model.replay);
  // frozen, as the items converted once are: the chat encoder keeps the messages of frozen items
  // (the list not: it is joined to the held items, thousands for a long history)
  const converted = deepFreezeEach(toModelItems(added, NO_TOOLS, recorded, replay));
  const held: HeldModelItems = { items: model.items.concat(converted), remoteImages: model.remoteImages || converted.some(holdsRemoteImage), namespaced: namespaced ?? model.namespaced, replay };
  const owner = model.owner ?? (unstoredOwner !== undefined && added.some((item) => handlerForCallItem(item.type) !== undefined) ? unstoredOwner : undefined);
  if (owner !== undefined) held.owner = owner;
  return held;
}

/** Context-free items name no tool of the turn's: converted without one, their names are flattened. */
const NO_TOOLS = new ToolRegistry();

/**
 * Whether an item's model items depend on nothing but the items before it (through the replay
 * state) and not on what the turn declares — but for the names of namespaced tools, checked each
 * turn (`namesHold`): messages, reasoning, client function and custom calls and their outputs,
 * MCP tool listings (the model sees none), approvals and their answers, and gateway calls
 * replayed from a record of the same responses (a call and its result, grouped by round within
 * them). Not: gateway calls without such a record (a later turn looks in the store), tool
 * searches (replayed from the registry) and compactions (which drop what comes before them).
 */
function contextFree(item: Item, recorded: CallRecordLookup): boolean {
  // or a gateway call with its record
  return contextFreeType(item.type) || (handlerForCallItem(item.type) !== undefined && recorded.get(item.id) !== undefined);
}

/** Whether every item of `type` is context-free (`contextFree`), whatever it holds. */
function contextFreeType(type: string): boolean {
  switch (type) {
    case 'message':
    case 'reasoning':
    case 'function_call':
    case 'custom_tool_call':
    case 'function_call_output':
    case 'custom_tool_call_output':
      return true;
    default:
      // a listing that opens a turn (the model sees none), an approval (paired through the replay state)
      return preludeFor(type) !== undefined || APPROVAL_ITEMS.has(type);
  }
}

function everyType(types: ReadonlySet<string>, holds: (type: string) => boolean): boolean {
  for (const type of types) if (!holds(type)) return false;
  return true;
}

/** The namespaced client tool a call names, under the name a conversion without tools gives it. */
function namespacedName(item: Item): NamespacedName | undefined {
  if ((item.type !== 'function_call' && item.type !== 'custom_tool_call') || typeof item.namespace !== 'string' || item.namespace.length === 0) return undefined;
  const type = item.type === 'function_call' ? 'function' : 'custom';
  return { type, name: item.name, namespace: item.namespace, modelName: flattenedName(item.namespace, item.name) };
}

const nameKey = (type: string, namespace: string, name: string) => `${type}\u0000${namespace}\u0000${name}`;

/**
 * Whether held model items name their namespaced calls as a conversion with `registry` would:
 * by the declared tool's model-visible name, or (not declared) its flattened name.
 */
export function namesHold(model: HeldModelItems, registry: ToolRegistry): boolean {
  if (model.namespaced.size === 0) return true;
  for (const entry of registry.all()) {
    const { type, name, namespace } = entry.identity;
    if (namespace === undefined) continue;
    const assumed = model.namespaced.get(nameKey(type, namespace, name));
    if (assumed !== undefined && assumed.modelName !== entry.modelName) return false;
  }
  return true;
}
