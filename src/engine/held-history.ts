// The history of a turn continued from a held `previous_response_id` chain, made once per chain
// tip from its parent's (issue 16: a continued turn's cost must not grow with its conversation).
import type { ModelItem } from '../protocol/model.js';
import type { Item } from '../protocol/responses.js';
import { holdsRemoteImage } from '../net/image-inline.js';
import type { GatewayCallRecord, StoredResponse } from '../store/store.js';
import { ToolRegistry } from '../tools/registry.js';
import { toModelItems } from './conversation.js';

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
const NOTHING_YET: HeldHistory = { items: [], records: [], model: { items: [], remoteImages: false } };

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
    model: history.model && added.every(contextFree) ? withModelItems(history.model, added) : undefined,
  };
}

function withModelItems(model: HeldModelItems, added: readonly Item[]): HeldModelItems {
  const converted = toModelItems(added, NO_TOOLS);
  return { items: model.items.concat(converted), remoteImages: model.remoteImages || converted.some(holdsRemoteImage) };
}

/** Context-free items name no tool of the turn's: their conversion needs no registry. */
const NO_TOOLS = new ToolRegistry();

/**
 * Whether an item's model items are the same whatever the turn declares and whatever comes
 * before or after it: messages, reasoning, client function and custom calls outside a namespace
 * (their name is the model's) and their outputs. Gateway calls (paired with records, grouped by
 * round), approvals (paired with their answers), tool searches (replayed from the registry) and
 * compactions (which drop what comes before them) are not.
 */
function contextFree(item: Item): boolean {
  switch (item.type) {
    case 'message':
    case 'reasoning':
    case 'function_call_output':
    case 'custom_tool_call_output':
      return true;
    case 'function_call':
    case 'custom_tool_call':
      return typeof item.namespace !== 'string' || item.namespace.length === 0;
    default:
      return false;
  }
}
