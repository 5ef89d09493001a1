import { checked, optionalStringField, requireStringField, requireToolOutput } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `custom_tool_call`: the call the model made, its raw `input` (echoed by stateless clients). */
export function validateCustomToolCall(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'call_id', param);
  requireStringField(item, 'name', param);
  requireStringField(item, 'input', param, true);
  optionalStringField(item, 'namespace', param);
  return checked(item);
}

/** `custom_tool_call_output`: the client's answer, paired with its call by `call_id`. */
export function validateCustomToolCallOutput(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'call_id', param);
  requireToolOutput(item, param);
  return checked(item);
}
