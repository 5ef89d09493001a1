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

/**
 * Freezes each of `items` and everything in it, but not the list: a frozen array sends every
 * `concat` it takes part in, even as a two-item argument, and its `slice`, `some` and `for … of`
 * down V8's element-by-element path (Node 20: 10–100 × slower for a long list,
 * bench/frozen-arrays.mjs). For lists that are joined to longer ones.
 */
export function deepFreezeEach<T>(items: T[]): T[] {
  for (const item of items) deepFreeze(item);
  return items;
}

/**
 * `make(value, arg)` made once for a frozen object and kept, frozen, in `made`: a shared object
 * (parsed or converted once, the same object request after request) gets the same result every
 * time, so what is kept by that result downstream is kept too; anything else is made anew. `make`
 * must depend on `value` alone (`arg` only names it, e.g. in an error).
 */
export function madeOnce<K extends object, V, A>(made: WeakMap<K, V>, value: K, make: (value: K, arg: A) => V, arg: A): V {
  if (!Object.isFrozen(value)) return make(value, arg);
  let result = made.get(value);
  if (result === undefined) {
    result = deepFreeze(make(value, arg));
    made.set(value, result);
  }
  return result;
}
