import { checked, optionalArrayField, optionalStringField } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `code_interpreter_call`: a run the gateway made (echoed by stateless clients); its container carries state across turns. */
export function validateCodeInterpreterCall(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'code', param);
  optionalStringField(item, 'container_id', param);
  optionalArrayField(item, 'outputs', param);
  return checked(item);
}
