import { isInterned } from './interned-member.js';

/** Deeper than this, a value is treated as different (no unbounded recursion on hostile schemas). */
const MAX_DEPTH = 64;

/**
 * The serialisation of values that clients send again and again (the same tool declarations on
 * every request), kept by content: `get(key, value)` is `encode(JSON.stringify(value))`, reused
 * while the value under `key` is the same JSON — checked by walking it against a snapshot of the
 * kept text, which is far cheaper than serialising it again. The result depends on nothing but
 * the content, so one entry serves every tenant. Least recently used keys are evicted; values
 * serialising to more than `maxChars` are not kept.
 */
export class KeptJson<T> {
  private readonly kept = new Map<string, { snapshot: Snapshot; encoded: T }>();

  constructor(
    private readonly encode: (json: string) => T,
    private readonly capacity: number,
    private readonly maxChars: number,
  ) {}

  /** `key`: cheap and telling (names in order); the content is always compared in full. */
  get(key: string, value: unknown): T {
    const hit = this.kept.get(key);
    if (hit !== undefined && sameJson(value, hit.snapshot, 0)) {
      // re-insert: Map keeps insertion order, so the first key is the least recently used
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit.encoded;
    }
    const json = JSON.stringify(value);
    const encoded = this.encode(json);
    if (json.length <= this.maxChars) {
      this.kept.delete(key);
      this.kept.set(key, { snapshot: snapshotOf(json), encoded });
      if (this.kept.size > this.capacity) this.kept.delete(this.kept.keys().next().value!);
    }
    return encoded;
  }
}

/**
 * A kept value as plain JSON, its objects' keys listed once (compared without allocating). An
 * object remembers the last interned value found equal to it (`same`, util/interned-member.ts:
 * parsed JSON, deeply frozen, shared by the requests that send it): that value cannot have changed,
 * so meeting it again ends the comparison there.
 */
type Snapshot = string | number | boolean | null | Snapshot[] | SnapshotObject;
interface SnapshotObject {
  keys: string[];
  values: Snapshot[];
  same?: object;
}

/** `JSON.parse(json)`, objects turned into their key and value lists. */
export function snapshotOf(json: string): Snapshot {
  const compile = (v: unknown, depth: number): Snapshot => {
    if (v === null || typeof v !== 'object') return v as Snapshot;
    // deeper than sameJson looks: never compared (and no deep recursion here)
    if (depth >= MAX_DEPTH) return null;
    if (Array.isArray(v)) return v.map((item) => compile(item, depth + 1));
    const keys = Object.keys(v);
    return { keys, values: keys.map((key) => compile((v as Record<string, unknown>)[key], depth + 1)) };
  };
  return compile(JSON.parse(json), 0);
}

/**
 * Whether `JSON.stringify(value)` is the text `snapshot` was made from (`snapshotOf`).
 * Conservative: anything `JSON.stringify` would transform (`toJSON`, non-finite numbers,
 * `undefined` in an array, class instances) counts as different, so the value is serialised again.
 */
export function sameJson(value: unknown, snapshot: Snapshot, depth = 0): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value === snapshot;
    case 'number':
      return Number.isFinite(value) && value === snapshot;
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null || snapshot === null) return value === snapshot;
  if (typeof snapshot !== 'object' || depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    if (!Array.isArray(snapshot) || value.length !== snapshot.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameJson(value[i], snapshot[i], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(snapshot)) return false;
  if (snapshot.same === value) return true;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === 'function') return false;
  const { keys, values } = snapshot;
  let at = 0;
  // for…in: the own enumerable keys in Object.keys order (a plain object inherits none)
  for (const key in object) {
    const member = object[key];
    // left out by JSON.stringify, so absent from the snapshot
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    if (keys[at] !== key || !sameJson(member, values[at], depth + 1)) return false;
    at++;
  }
  if (at !== keys.length) return false;
  // isFrozen first: a request's own objects never are, and it costs less than the set's lookup
  if (Object.isFrozen(object) && isInterned(object)) snapshot.same = object;
  return true;
}

/**
 * `json` with its one `hole` (e.g. `"tools":[]`) filled with `fill`'s text (`[…]`): the two sides
 * around it, or undefined when `hole` is not there exactly once (then it might not be the key,
 * and the caller serialises the whole value instead).
 */
export function aroundHole(json: string, hole: string): [before: string, after: string] | undefined {
  const at = json.indexOf(hole);
  if (at < 0 || json.lastIndexOf(hole) !== at) return undefined;
  // the hole ends with the empty brackets the filling replaces
  return [json.slice(0, at + hole.length - 2), json.slice(at + hole.length)];
}
