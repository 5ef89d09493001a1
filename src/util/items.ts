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
