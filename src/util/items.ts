import { ID_PREFIX, type Item, type JsonObject } from '../protocol/responses.js';
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
 */
export function normalizeStoredItem(item: Item | JsonObject): Item {
  let out = item as JsonObject;
  if (out.type === 'message' && typeof out.content === 'string') {
    out = { ...out, content: [{ type: out.role === 'assistant' ? 'output_text' : 'input_text', text: out.content, ...(out.role === 'assistant' ? { annotations: [] } : {}) }] };
  }
  if (typeof out.id !== 'string') out = { id: newId(ITEM_ID_PREFIX[String(out.type)] ?? ID_PREFIX.item), ...out };
  if (out.type === 'message' && out.status === undefined) out = { ...out, status: 'completed' };
  return out as Item;
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
