/**
 * The building blocks of item validation (request `input`, conversation `items`): one validator per
 * item type, pure, answering the protocol's typed item. A validator returns the object it was given
 * when it is already valid (no copy on the hot path) and throws `InvalidItemError` naming the exact
 * field (`input[3].call_id`) otherwise; the engine turns that into an OpenAI-shaped 400.
 */
import type { InputItem, JsonObject } from './responses.js';

/** A field of an item that is missing or malformed; `code` is one of the error catalogue's. */
export class InvalidItemError extends Error {
  constructor(
    message: string,
    readonly param: string,
    readonly code: 'invalid_type' | 'invalid_value' | 'missing_required_parameter',
  ) {
    super(message);
    this.name = 'InvalidItemError';
  }
}

/** Checks one item of a known `type` (`item.type` is set, `param` names the item: `input[3]`). */
export type ItemValidator = (item: JsonObject, param: string) => InputItem;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string field that must be present (non-empty unless `allowEmpty`). */
export function requireStringField(item: JsonObject, key: string, param: string, allowEmpty = false): string {
  const value = item[key];
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
    throw new InvalidItemError(
      value === undefined ? `Missing required parameter: '${param}.${key}'.` : `Invalid type for '${param}.${key}': expected a string.`,
      `${param}.${key}`,
      value === undefined ? 'missing_required_parameter' : 'invalid_type',
    );
  }
  return value;
}

/** A string field that may be absent or null. */
export function optionalStringField(item: JsonObject, key: string, param: string): void {
  const value = item[key];
  if (value !== undefined && value !== null && typeof value !== 'string') {
    throw new InvalidItemError(`Invalid type for '${param}.${key}': expected a string.`, `${param}.${key}`, 'invalid_type');
  }
}

/** An array field that may be absent or null. */
export function optionalArrayField(item: JsonObject, key: string, param: string): void {
  const value = item[key];
  if (value !== undefined && value !== null && !Array.isArray(value)) {
    throw new InvalidItemError(`Invalid type for '${param}.${key}': expected an array.`, `${param}.${key}`, 'invalid_type');
  }
}

/**
 * The client call items of tool types whose calls the client runs (`function_call`,
 * `custom_tool_call`), echoed back by stateless clients: `call_id`, `name`, the call's payload
 * (`arguments`, or a custom tool's raw `input`; may be empty) and an optional `namespace`.
 */
export function clientCallValidator(payload: 'arguments' | 'input'): ItemValidator {
  return (item, param) => {
    requireStringField(item, 'call_id', param);
    requireStringField(item, 'name', param);
    requireStringField(item, payload, param, true);
    optionalStringField(item, 'namespace', param);
    return checked(item);
  };
}

/** The client's answer to such a call, paired with it by `call_id`: a string or an array of content parts. */
export function validateClientCallOutput(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'call_id', param);
  if (typeof item.output !== 'string' && !Array.isArray(item.output)) {
    throw new InvalidItemError(`Invalid type for '${param}.output': expected a string or an array of content parts.`, `${param}.output`, 'invalid_type');
  }
  return checked(item);
}

/** The item after its checks: its fields are now what `T` says (the object itself, not a copy). */
export function checked<T extends InputItem>(item: JsonObject): T {
  return item as unknown as T;
}
