/**
 * What was made of a request's leading shared objects (frozen: a history a client resends whole,
 * parsed once), kept for the next request of the same conversation: kept by the last of them,
 * found again by comparing a request's objects with the kept ones (references), a few objects
 * back at most, and replaced by a longer run as the conversation grows — one run per
 * conversation, its newest (a fork from an earlier turn makes its own).
 *
 * Used for a resent history's model items (engine/held-history.ts), its checked and storable
 * items (`mapWithKeptRun`), its item types (util/item-types.ts) and paired outputs
 * (engine/output-pairing.ts), a resent Messages conversation's decoded messages
 * (messages/decoded-runs.ts), and whole lists resent with every request (`KeptLists`: an echoed
 * tool list, the upstream request's tool bytes).
 */
export interface KeptRun<T> {
  /** The objects the run was made of, in order. */
  readonly items: readonly unknown[];
  readonly value: T;
}

/** How far back a resent history's run is looked for: the items of a few turns. */
export const TURNS_LOOKBACK = 64;

export class KeptRuns<T> {
  private readonly runs = new WeakMap<object, KeptRun<T>>();

  /** `lookback`: how far back from the end of the shared objects a run's last one is looked for. */
  constructor(private readonly lookback: number) {}

  /** The kept run `items` begins with, ending within its first `end` objects (and at `floor` or later). */
  find(items: readonly unknown[], end: number, floor = 0): KeptRun<T> | undefined {
    for (let last = end - 1; last >= Math.max(floor, end - 1 - this.lookback); last--) {
      const run = this.runs.get(items[last] as object);
      if (run !== undefined && run.items.length === last + 1 && startsWithSame(items, run.items)) return run;
    }
    return undefined;
  }

  /** Keeps `value` for `items` (frozen objects), letting go of `replaced`, the run it extends. */
  keep(items: readonly unknown[], value: T, replaced?: KeptRun<T>): void {
    if (replaced !== undefined) this.runs.delete(replaced.items.at(-1) as object);
    this.runs.set(items.at(-1) as object, { items, value });
  }
}

/**
 * What was made of a whole list of shared objects (a tool list resent byte for byte, parsed once),
 * found again for a list of exactly the same objects: a run that is the whole list.
 */
export class KeptLists<T> {
  private readonly runs = new KeptRuns<T>(0);

  /** The value kept for exactly `members`, if any. */
  find(members: readonly unknown[]): T | undefined {
    return members.length > 0 && isShared(members.at(-1)) ? this.runs.find(members, members.length)?.value : undefined;
  }

  /** Keeps `value` for `members` when every one of them is shared (else nothing is kept). */
  keep(members: readonly unknown[], value: T): void {
    if (members.length > 0 && members.every(isShared)) this.runs.keep(members, value);
  }
}

/** A shared object: frozen (parsed once and kept, the same object every request). */
export function isShared(value: unknown): value is object {
  return typeof value === 'object' && value !== null && Object.isFrozen(value);
}

/**
 * How many leading objects are shared, by the arrays that were handed out with them counted
 * (`withSharedLength`): a resent history's stages each asked again, an object at a time.
 */
const sharedLengths = new WeakMap<readonly unknown[], number>();

/** Below this many, counting the shared objects again costs less than noting how many they are. */
const MIN_NOTED = 128;

/** `items` (an array no one changes) noted as beginning with `count` shared objects (when they are many). */
export function withSharedLength<A extends readonly unknown[]>(items: A, count: number): A {
  if (count >= MIN_NOTED) sharedLengths.set(items, count);
  return items;
}

/** How many of `items`' leading objects are shared (counted where not noted). */
export function sharedLength(items: readonly unknown[]): number {
  return sharedLengths.get(items) ?? leadingShared(items);
}

/** How many of `items`' leading objects are shared, counted (the first `from` known to be). */
export function leadingShared(items: readonly unknown[], from = 0): number {
  let end = from;
  while (end < items.length && isShared(items[end])) end++;
  return end;
}

/** Below this many shared objects, looking at them again (mapping, checking) costs less than keeping a run of them. */
export const MIN_KEPT_RUN = 16;

/**
 * `items.map(map)` for a list whose leading objects are shared (frozen: a history resent whole,
 * parsed once), the results for those kept as a run in `runs`: the next request of the
 * conversation takes them by reference and maps only what follows. `map` must give the same
 * shared result for a frozen object every time (what it makes of one is made once and frozen:
 * `madeOnce`), so the result begins with as many shared objects, noted (`sharedLength`).
 */
export function mapWithKeptRun<T, U>(runs: KeptRuns<readonly U[]>, items: readonly T[], map: (item: T, index: number) => U): U[] {
  const end = sharedLength(items);
  if (end < MIN_KEPT_RUN) return items.map(map);
  const run = runs.find(items, end);
  const out: U[] = run === undefined ? [] : run.value.slice();
  for (let i = out.length; i < items.length; i++) out.push(map(items[i], i));
  if (run?.items.length !== end) runs.keep(items.slice(0, end), out.slice(0, end), run);
  return withSharedLength(out, end);
}

/** Whether `items` begins with `run`: the same objects (last first: a kept run ends where requests differ). */
function startsWithSame(items: readonly unknown[], run: readonly unknown[]): boolean {
  for (let i = run.length - 1; i >= 0; i--) if (items[i] !== run[i]) return false;
  return true;
}
