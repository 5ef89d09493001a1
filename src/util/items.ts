import { ID_PREFIX, type Item, type JsonObject, type MessageItem, type ResolvedInputItem } from '../protocol/responses.js';
import { madeOnce } from './freeze.js';
import { KeptRuns, mapWithKeptRun, TURNS_LOOKBACK } from './kept-runs.js';
import { newId } from './ids.js';

/** Id prefixes for items that arrive without one. */
const ITEM_ID_PREFIX: Record<string, string> = {
  message: ID_PREFIX.message,
  function_call: ID_PREFIX.functionCall,
  function_call_output: ID_PREFIX.functionCallOutput,
  custom_tool_call: ID_PREFIX.customToolCall,
  custom_tool_call_output: 'ctco',
  reasoning: ID_PREFIX.reasoning,
};

/**
 * An item as stored (response input items, conversation items): an id minted when absent,
 * string message content turned into one text part, and `status: 'completed'` on messages.
 * Idempotent: a normalized item comes back unchanged (same object).
 *
 * Items reach the store only through here, after their validator (`input`, conversation items) or
 * made by the gateway itself (output): read back, they are trusted as `Item` without a second check.
 */
export function normalizeStoredItem(item: ResolvedInputItem): Item {
  if (item.type === 'message') {
    const { id, status, content } = item;
    if (typeof content !== 'string' && typeof id === 'string' && status !== undefined) return item as MessageItem;
    const parts: MessageItem['content'] = typeof content !== 'string' ? content : item.role === 'assistant' ? [{ type: 'output_text', text: content, annotations: [] }] : [{ type: 'input_text', text: content }];
    // one copy; the id stays first when it is minted (an explicit null one is replaced)
    const out = { id: '', ...item, content: parts, status: status ?? 'completed' };
    out.id = typeof id === 'string' ? id : newId(ID_PREFIX.message);
    return out;
  }
  // an item with its id is as stored (a call's `status` is optional on input, as on OpenAI)
  return typeof item.id === 'string' ? (item as Item) : (withId(item) as Item);
}

/**
 * Items of turns not stored, as `normalizeStoredItem` makes them, by the item: a frozen one (a
 * history the client resends whole, checked once) gets the same frozen item every request, its
 * minted id included — no copy and no id per item and request. Only for a turn whose items are
 * not kept (neither stored nor in a conversation): a stored item's id is minted for it alone.
 */
const unstoredItems = new WeakMap<object, Item>();

/** `normalizeStoredItem` of an item of a turn not stored: made once for a frozen item. */
export function normalizeUnstoredItem(item: ResolvedInputItem): Item {
  return madeOnce(unstoredItems, item, normalizeStoredItem, undefined);
}

/** The items of a resent history's leading shared items as `normalizeUnstoredItem` makes them, as a run. */
const unstoredRuns = new KeptRuns<readonly Item[]>(TURNS_LOOKBACK);

/** `items.map(normalizeUnstoredItem)`, a resent history's leading shared items taken as a run. */
export function normalizeUnstoredItems(items: readonly ResolvedInputItem[]): Item[] {
  return mapWithKeptRun(unstoredRuns, items, normalizeUnstoredItem);
}

/** A copy of `item` with a minted id in front (an explicit `null` id is replaced too). */
function withId<T extends ResolvedInputItem>(item: T): T & { id: string } {
  const prefix = ITEM_ID_PREFIX[item.type] ?? ID_PREFIX.item;
  const out = { id: newId(prefix), ...item };
  if (typeof out.id !== 'string') out.id = newId(prefix);
  return out as T & { id: string };
}

/** Item types only a client sends (answers to the model's calls and requests, references). */
const CLIENT_ITEM_TYPES = new Set(['mcp_approval_response', 'function_call_output', 'custom_tool_call_output', 'tool_search_output', 'item_reference']);

/**
 * Whether the model produced an item (an assistant message, a call, reasoning …). Stateless
 * clients echo the whole history: answers after the input's last model-produced item are new.
 * An item without `type` but with a `role` is a message.
 */
export function isModelProduced(item: JsonObject): boolean {
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  if (type === 'message') return item.role === 'assistant';
  return !CLIENT_ITEM_TYPES.has(String(type));
}
