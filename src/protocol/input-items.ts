/**
 * Validators of the items the engine itself owns: messages, reasoning, compactions and item
 * references. Tool types contribute the validators of their own items (`ToolHandler.items`).
 */
import { withAddedFields } from './client-objects.js';
import { InvalidItemError, checked, isJsonObject, optionalArrayField, optionalStringField, requireStringField, type ItemValidator } from './item-validation.js';
import type { InputItem, JsonObject } from './responses.js';

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);
const CONTENT_PART_TYPES = new Set(['input_text', 'input_image', 'input_file', 'output_text', 'refusal', 'text', 'summary_text', 'reasoning_text']);

/** A message: a known role, content a string or content parts (an item with a `role` and no `type` is one). */
export function validateMessage(item: JsonObject, param: string): InputItem {
  if (typeof item.role !== 'string' || !ROLES.has(item.role)) {
    throw new InvalidItemError(`Invalid value for '${param}.role': expected one of 'user', 'assistant', 'system', 'developer'.`, `${param}.role`, 'invalid_value');
  }
  const content = item.content;
  if (typeof content !== 'string') {
    if (!Array.isArray(content)) throw new InvalidItemError(`Invalid type for '${param}.content': expected a string or an array of content parts.`, `${param}.content`, 'invalid_type');
    for (let j = 0; j < content.length; j++) {
      const part: unknown = content[j];
      const partParam = `${param}.content[${j}]`;
      if (!isJsonObject(part) || typeof part.type !== 'string') throw new InvalidItemError(`Invalid '${partParam}': expected a content part object with a 'type'.`, partParam, 'invalid_type');
      if (!CONTENT_PART_TYPES.has(part.type)) throw new InvalidItemError(`Invalid value: '${part.type}'. Unknown content part type at '${partParam}.type'.`, `${partParam}.type`, 'invalid_value');
      if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text !== 'string') {
        throw new InvalidItemError(`Invalid type for '${partParam}.text': expected a string.`, `${partParam}.text`, 'invalid_type');
      }
    }
  }
  // the easy form (`{role, content}`) gets its type; a typed message is returned as it came
  return checked(item.type === 'message' ? item : withAddedFields(item, { type: 'message' }));
}

/** A reasoning item: its summary and content, when present, are arrays of parts. */
export function validateReasoning(item: JsonObject, param: string): InputItem {
  optionalArrayField(item, 'summary', param);
  optionalArrayField(item, 'content', param);
  optionalStringField(item, 'encrypted_content', param);
  return checked(item);
}

/** A compaction item: its summary travels in `encrypted_content` (foreign ones are kept, not decoded). */
export function validateCompaction(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'encrypted_content', param);
  return checked(item);
}

/** A reference to a stored item, resolved before the turn runs. */
export function validateItemReference(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'id', param);
  return checked(item);
}

/** The engine's own item types and their validators. */
export const ENGINE_ITEM_VALIDATORS: ReadonlyMap<string, ItemValidator> = new Map([
  ['message', validateMessage],
  ['reasoning', validateReasoning],
  ['compaction', validateCompaction],
  ['item_reference', validateItemReference],
]);
