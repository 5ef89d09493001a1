import type { JsonObject } from '../protocol/messages.js';
import type { PairingState } from './tool-pairing.js';
import { startsWithSame } from '../util/objects.js';

/**
 * The leading messages of a conversation resent whole, decoded and checked: a turn decodes and
 * checks what follows them only. They are the request's frozen messages (parsed once and kept,
 * http/json.ts), kept by the last of them, found again by comparing references a few messages
 * back, and replaced by a longer run as the conversation grows (one per conversation, its newest:
 * a fork from an earlier turn decodes anew).
 *
 * A run stops before the request's last message: a client that marks its newest message for
 * caching (Claude Code's `cache_control`) sends it again without the mark the turn after, a new
 * object that no earlier run may end with.
 */
export interface DecodedRun {
  /** The messages as the client sent them (frozen), in order. */
  readonly messages: readonly unknown[];
  /** Their input items, in order. */
  readonly items: readonly JsonObject[];
  /** What they hold that was accepted but not acted on, named by place (`messages[i].content[j] (type)`). */
  readonly ignored: readonly string[];
  /** The tool pairing check after them. */
  readonly pairing: PairingState;
}

const runs = new WeakMap<object, DecodedRun>();
/** Below this many messages, decoding them again costs less than keeping them. */
const MIN_RUN = 8;
/** How far back from the frozen messages' end a kept run is looked for (a few turns' messages). */
const LOOKBACK = 16;

/** How many of `messages` a run may hold: the leading frozen ones, the last message left out. */
export function runEnd(messages: readonly unknown[]): number {
  let frozen = 0;
  while (frozen < messages.length && isFrozenObject(messages[frozen])) frozen++;
  const end = Math.min(frozen, messages.length - 1);
  return end >= MIN_RUN ? end : 0;
}

/** The kept run `messages` begins with, among the first `end` of them (`runEnd`). */
export function keptRun(messages: readonly unknown[], end: number): DecodedRun | undefined {
  for (let last = end - 1; last >= Math.max(MIN_RUN - 1, end - LOOKBACK); last--) {
    const run = runs.get(messages[last] as object);
    if (run !== undefined && run.messages.length === last + 1 && startsWithSame(messages, run.messages)) return run;
  }
  return undefined;
}

/** Keeps `run` (its last message a key), letting go of `replaced`, which it extends. */
export function keepRun(run: DecodedRun, replaced: DecodedRun | undefined): void {
  if (replaced !== undefined) runs.delete(replaced.messages.at(-1) as object);
  runs.set(run.messages.at(-1) as object, run);
}

function isFrozenObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.isFrozen(value);
}
