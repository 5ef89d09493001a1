import type { JsonObject } from '../protocol/messages.js';
import type { PairingState } from './tool-pairing.js';
import { KeptRuns, sharedLength, type KeptRun } from '../util/kept-runs.js';

/**
 * The leading messages of a conversation resent whole, decoded and checked: a turn decodes and
 * checks what follows them only. They are the request's frozen messages (parsed once and kept,
 * http/json.ts), kept as a run (util/kept-runs.ts: by the last of them, found again by reference,
 * one per conversation).
 *
 * A run stops before the request's last message: a client that marks its newest message for
 * caching (Claude Code's `cache_control`) sends it again without the mark the turn after, a new
 * object that no earlier run may end with.
 */
export interface DecodedMessages {
  /** Their input items, in order. */
  readonly items: readonly JsonObject[];
  /** What they hold that was accepted but not acted on, named by place (`messages[i].content[j] (type)`). */
  readonly ignored: readonly string[];
  /** The tool pairing check after them. */
  readonly pairing: PairingState;
}
export type DecodedRun = KeptRun<DecodedMessages>;

/** Below this many messages, decoding them again costs less than keeping them. */
const MIN_RUN = 8;
/** How far back from the frozen messages' end a kept run is looked for (a few turns' messages). */
export const decodedRuns = new KeptRuns<DecodedMessages>(16);

/** How many of `messages` a run may hold: the leading frozen ones, the last message left out (0: too few). */
export function runEnd(messages: readonly unknown[]): number {
  const end = Math.min(sharedLength(messages), messages.length - 1);
  return end >= MIN_RUN ? end : 0;
}

/** The kept run `messages` begins with, among the first `end` of them (`runEnd`). */
export function keptRun(messages: readonly unknown[], end: number): DecodedRun | undefined {
  return decodedRuns.find(messages, end, MIN_RUN - 1);
}
