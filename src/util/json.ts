import type { JsonObject } from '../protocol/responses.js';

/** Tool-call arguments as an object: '' counts as `{}`; anything but a JSON object is undefined. */
export function parseJsonObject(text: string): JsonObject | undefined {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How deeply client JSON may nest. `JSON.parse` copes with any depth, but `JSON.stringify` and every
 * recursive walk after it (schema normalization, storage) overflow the stack somewhere in the
 * thousands; a real tool schema or item is far shallower than this.
 */
export const MAX_JSON_DEPTH = 100;

/**
 * The path to the first place where `value` nests deeper than `maxDepth` containers, or null when it
 * does not. Recursion is bounded by `maxDepth`, so the check itself cannot overflow.
 */
export function findTooDeep(value: unknown, maxDepth = MAX_JSON_DEPTH): Array<string | number> | null {
  if (value === null || typeof value !== 'object') return null;
  if (maxDepth === 0) return [];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const path = findTooDeep(value[i], maxDepth - 1);
      if (path) return (path.unshift(i), path);
    }
    return null;
  }
  for (const key in value) {
    const path = findTooDeep((value as Record<string, unknown>)[key], maxDepth - 1);
    if (path) return (path.unshift(key), path);
  }
  return null;
}

/** A path as an error `param` (`tools[0].parameters.properties`), its first `segments` parts only. */
export function pathParam(path: ReadonlyArray<string | number>, segments = 4): string {
  let param = '';
  for (const part of path.slice(0, segments)) param += typeof part === 'number' ? `[${part}]` : param === '' ? part : `.${part}`;
  return param;
}

/**
 * Exactly `JSON.stringify(text)`, for the short strings of a stream's deltas: a token needs no
 * escaping far more often than not, and then it is its characters in quotes — what `JSON.stringify`
 * gives too, at twice the cost of this check for a token's few characters.
 */
export function jsonString(text: string): string {
  // a long text is read once by JSON.stringify rather than twice
  if (text.length > 64) return JSON.stringify(text);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // a quote, a backslash, a control character or a surrogate (a lone one is escaped)
    if (code < 0x20 || code === 0x22 || code === 0x5c || (code >= 0xd800 && code <= 0xdfff)) return JSON.stringify(text);
  }
  return `"${text}"`;
}
