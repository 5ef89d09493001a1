/**
 * Work that arrives in bursts, spread over event-loop turns (issue 16: 1,000 streams opened or
 * dropped at once must not stall the loop for more than a few milliseconds). A burst of new
 * requests or of client disconnects arrives in one poll phase; doing each one's work there —
 * preparing a turn, or aborting one (its upstream request, tool calls and settlement) — would hold
 * the loop for all of them, so timers (keep-alives, timeouts, heartbeats) and other clients' I/O
 * would wait. Here work beyond a time slice per loop turn waits for the next turn, in arrival
 * order. On an idle gateway nothing waits: a lone request starts at once.
 */

/** Work done in one loop turn before the rest waits for the next turn. */
const SLICE_MS = 4;
/**
 * Starts granted in one loop turn at most: requests of a burst often ask for their slot before any
 * of them has done its work (so no time has passed yet), and a start costs ≈ 0.1–0.3 ms.
 */
const STARTS_PER_SLICE = 16;

const queue: Array<() => void> = [];
let draining = false;
/** When this loop turn's first sliced work began; -1 until some runs in this turn. */
let sliceStart = -1;
let startsThisSlice = 0;

function startSlice(now: number): void {
  sliceStart = now;
  startsThisSlice = 0;
  // the check phase ends this loop turn's slice: the next turn's work starts a new one
  setImmediate(endSlice);
}

function endSlice(): void {
  sliceStart = -1;
}

/** Whether this loop turn has already spent its slice; if not, one more start is counted. */
function sliceSpent(): boolean {
  const now = performance.now();
  if (sliceStart < 0) startSlice(now);
  else if (now - sliceStart >= SLICE_MS || startsThisSlice >= STARTS_PER_SLICE) return true;
  startsThisSlice++;
  return false;
}

/** Resolves at once (undefined) while this loop turn has time left, else in a later turn. */
export function turnSlot(): Promise<void> | undefined {
  if (queue.length === 0 && !sliceSpent()) return undefined;
  return new Promise((resolve) => enqueue(resolve));
}

/** Runs `task` in a later loop turn's slice (a disconnect's abort: never in the close burst itself). */
export function later(task: () => void): void {
  enqueue(task);
}

function enqueue(task: () => void): void {
  queue.push(task);
  if (!draining) {
    draining = true;
    setImmediate(() => void drain());
  }
}

async function drain(): Promise<void> {
  const start = performance.now();
  for (let started = 0; queue.length > 0 && started < STARTS_PER_SLICE; started++) {
    queue.shift()!();
    // let the work it resumed run (microtasks) before measuring the slice
    await undefined;
    if (performance.now() - start >= SLICE_MS) break;
  }
  if (queue.length > 0) setImmediate(() => void drain());
  else draining = false;
}
