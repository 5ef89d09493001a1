import { InvalidItemError, checked, optionalArrayField, optionalStringField } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

function checkExecution(item: JsonObject, param: string): void {
  const execution = item.execution;
  if (execution !== undefined && execution !== 'server' && execution !== 'client') {
    throw new InvalidItemError(`Invalid value for '${param}.execution': expected 'server' or 'client'.`, `${param}.execution`, 'invalid_value');
  }
}

/** `tool_search_call`: a search the model asked for (its arguments as the model wrote them). */
export function validateToolSearchCall(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'call_id', param);
  checkExecution(item, param);
  return checked(item);
}

/** `tool_search_output`: the tools a search loaded (declarations, checked when they load). */
export function validateToolSearchOutput(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'call_id', param);
  checkExecution(item, param);
  optionalArrayField(item, 'tools', param);
  return checked(item);
}
