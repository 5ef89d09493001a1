import { InvalidItemError, checked, isJsonObject } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `web_search_call`: a search the gateway ran (echoed by stateless clients); its `action` says what it did. */
export function validateWebSearchCall(item: JsonObject, param: string): InputItem {
  if (item.action !== undefined && item.action !== null && !isJsonObject(item.action)) {
    throw new InvalidItemError(`Invalid type for '${param}.action': expected an object.`, `${param}.action`, 'invalid_type');
  }
  return checked(item);
}
