/**
 * Freezes a JSON-like value and everything in it. Shared, cached documents (a store's chain cache,
 * the model items converted from them) are frozen so that no reader can change what the next
 * reader sees; code that tried would throw (ES modules run in strict mode). `onFrozen` is told of
 * each object frozen here.
 */
export function deepFreeze<T>(value: T, onFrozen?: (object: object) => void): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    onFrozen?.(value);
    for (const child of Object.values(value)) deepFreeze(child, onFrozen);
  }
  return value;
}
