import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';

/** A required non-empty string field of a Messages request object (`param` names the object). */
export function requireString(block: JsonObject, key: string, param: string): string {
  const v = block[key];
  if (typeof v !== 'string' || v.length === 0) throw invalidRequest(`${param}.${key}: Field required (a non-empty string).`, `${param}.${key}`, 'missing_required_parameter');
  return v;
}
