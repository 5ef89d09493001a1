import type { ModelFunction } from '../protocol/model.js';
import { intern } from '../util/interned-member.js';

/**
 * Model functions of kept declarations, by their schema. A tool list resent byte for byte is parsed
 * once (http/json.ts), so its schemas are the same frozen objects every request: a function made
 * from one is kept (interned) and given again while its name, description and `strict` are the
 * same, so the upstream request's tool list is the same functions every request and its kept
 * bytes are found by reference (upstream/kept-tools.ts), not compared field by field.
 */
const keptBySchema = new WeakMap<object, ModelFunction>();

/** `fn` (just made), or the kept function equal to it; a function with a schema of the request's own is `fn`. */
export function keptFunction(fn: ModelFunction): ModelFunction {
  const schema = fn.parameters;
  if (schema === undefined || !Object.isFrozen(schema)) return fn;
  const kept = keptBySchema.get(schema);
  if (kept !== undefined && kept.name === fn.name && kept.description === fn.description && kept.strict === fn.strict) return kept;
  keptBySchema.set(schema, intern(fn));
  return fn;
}
