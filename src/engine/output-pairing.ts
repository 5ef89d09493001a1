// A tool output must answer a call the conversation holds: the check of a turn's input, looking
// only at what a resent history adds (issue 16: a turn's cost must not grow with its history).
import { invalidRequest } from '../errors.js';
import type { Item } from '../protocol/responses.js';
import { CLIENT_CALL_ITEMS, CLIENT_OUTPUT_ITEMS } from '../tools/registry.js';
import { KeptRuns, MIN_KEPT_RUN, sharedLength, TURNS_LOOKBACK } from '../util/kept-runs.js';

/** How far back from an output its call is looked for before all the calls are collected. */
const RECENT_CALLS = 64;

/**
 * Leading shared items of resent histories (util/kept-runs.ts) whose every output answers a call
 * before it among them: checked once, whatever comes before or after them.
 */
const pairedRuns = new KeptRuns<true>(TURNS_LOOKBACK);

/**
 * Throws a 400 naming the first output in `input` that answers no call before it in `input` nor
 * in `history` (paired by `call_id`). `types`: the input's item types (`util/item-types.ts`).
 */
export function checkOutputsPaired(history: readonly Item[], input: readonly Item[], types: ReadonlySet<string>): void {
  if (!holdsOutput(types)) return;
  const shared = sharedLength(input);
  const run = shared >= MIN_KEPT_RUN ? pairedRuns.find(input, shared) : undefined;
  const calls = new PriorCalls(history, input);
  let pairedByHistory = false;
  for (let i = run?.items.length ?? 0; i < input.length; i++) {
    const item = input[i];
    if (!CLIENT_OUTPUT_ITEMS.has(item.type)) continue;
    const callId = item.call_id;
    const found = typeof callId === 'string' ? calls.find(callId, i) : 'none';
    if (found === 'none') throw invalidRequest(`No tool call found for ${item.type} with call_id ${String(callId)}.`, `input[${i}]`, 'invalid_value');
    if (found === 'history' && i < shared) pairedByHistory = true;
  }
  // a run is kept only when it pairs its outputs by itself: another history may come before it
  if (shared >= MIN_KEPT_RUN && run?.items.length !== shared && !pairedByHistory) pairedRuns.keep(input.slice(0, shared), true, run);
}

function holdsOutput(types: ReadonlySet<string>): boolean {
  for (const type of CLIENT_OUTPUT_ITEMS) if (types.has(type)) return true;
  return false;
}

/**
 * The calls before an item of the input: an output almost always answers one of the last few
 * items, looked at first; all of them (every call's first place) are collected once, only for an
 * output those do not answer.
 */
class PriorCalls {
  private inputFirsts: Map<string, number> | undefined;
  private historyFirsts: Map<string, number> | undefined;

  constructor(
    private readonly history: readonly Item[],
    private readonly input: readonly Item[],
  ) {}

  /** Where a call with `callId` is before `input[at]`: this input, the history, or nowhere. */
  find(callId: string, at: number): 'input' | 'history' | 'none' {
    const { input, history } = this;
    for (let j = at - 1; j >= Math.max(0, at - RECENT_CALLS); j--) if (isInputCallOf(input[j], callId)) return 'input';
    if (at > RECENT_CALLS) {
      this.inputFirsts ??= firstPlaces(input, isInputCall);
      const first = this.inputFirsts.get(callId);
      if (first !== undefined && first < at) return 'input';
    }
    for (let j = history.length - 1; j >= Math.max(0, history.length - RECENT_CALLS); j--) if (isHistoryCall(history[j]) && history[j].call_id === callId) return 'history';
    if (history.length > RECENT_CALLS) {
      this.historyFirsts ??= firstPlaces(history, isHistoryCall);
      if (this.historyFirsts.has(callId)) return 'history';
    }
    return 'none';
  }
}

/** A call the client sent in the input (a function or custom tool call). */
const isInputCall = (item: Item): boolean => CLIENT_CALL_ITEMS.has(item.type);
const isInputCallOf = (item: Item, callId: string): boolean => item.call_id === callId && isInputCall(item);
/** A call of the history: any item with a `call_id` that is not an output (a stored turn's calls are the gateway's own). */
const isHistoryCall = (item: Item): boolean => !CLIENT_OUTPUT_ITEMS.has(item.type);

/** The first place of each `call_id` among `items` that `isCall` holds a call. */
function firstPlaces(items: readonly Item[], isCall: (item: Item) => boolean): Map<string, number> {
  const firsts = new Map<string, number>();
  items.forEach((item, i) => {
    if (typeof item.call_id === 'string' && isCall(item) && !firsts.has(item.call_id)) firsts.set(item.call_id, i);
  });
  return firsts;
}
