import { checked, optionalArrayField } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `file_search_call`: a search the gateway ran (echoed by stateless clients). */
export function validateFileSearchCall(item: JsonObject, param: string): InputItem {
  optionalArrayField(item, 'queries', param);
  optionalArrayField(item, 'results', param);
  return checked(item);
}
