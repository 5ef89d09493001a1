import { KeptRuns, MIN_KEPT_RUN, sharedLength, TURNS_LOOKBACK } from './kept-runs.js';

/** The types of a resent history's leading shared items, as a run (a few turns looked back). */
const typeRuns = new KeptRuns<ReadonlySet<string>>(TURNS_LOOKBACK);

/**
 * The `type`s of `items`. What a turn asks of its whole input — does it hold a tool output, a
 * reference, a compaction, an approval's answer — is asked of this set; the types of a history a
 * client resends whole (its leading shared items: util/kept-runs.ts) are kept as a run, so that a
 * request looks only at the items that follow them.
 */
export function itemTypes(items: readonly { readonly type: string }[]): ReadonlySet<string> {
  const end = sharedLength(items);
  if (end < MIN_KEPT_RUN) return withTypes(new Set(), items, 0, items.length);
  const run = typeRuns.find(items, end);
  let shared = run?.value;
  if (run?.items.length !== end) {
    shared = withTypes(new Set(shared), items, run?.items.length ?? 0, end);
    typeRuns.keep(items.slice(0, end), shared, run);
  }
  return end === items.length ? shared! : withTypes(new Set(shared), items, end, items.length);
}

function withTypes(types: Set<string>, items: readonly { readonly type: string }[], from: number, to: number): Set<string> {
  for (let i = from; i < to; i++) types.add(items[i].type);
  return types;
}
