import { checked, optionalStringField, requireStringField, requireToolOutput } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `function_call`: the call the model made (echoed by stateless clients). */
export function validateFunctionCall(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'call_id', param);
  requireStringField(item, 'name', param);
  requireStringField(item, 'arguments', param, true);
  optionalStringField(item, 'namespace', param);
  return checked(item);
}

/** `function_call_output`: the client's answer, paired with its call by `call_id`. */
export function validateFunctionCallOutput(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'call_id', param);
  requireToolOutput(item, param);
  return checked(item);
}
