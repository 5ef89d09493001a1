/**
 * Client disconnects, acted on in small batches. A burst of closes (a load balancer dropping a
 * thousand streams at once) arrives in one event-loop turn; aborting each turn there — its
 * upstream request, tool calls and settlement — would hold the loop for all of them, so timers
 * (keep-alives, timeouts) and other clients' I/O wait. Here each batch runs in its own turn.
 */
const BATCH = 32;
const queue: AbortController[] = [];
let scheduled = false;

/** Aborts `controller` within the next event-loop turns (at most BATCH per turn, in arrival order). */
export function abortSoon(controller: AbortController): void {
  queue.push(controller);
  if (!scheduled) {
    scheduled = true;
    setImmediate(drain);
  }
}

function drain(): void {
  const batch = queue.splice(0, BATCH);
  for (const controller of batch) controller.abort();
  if (queue.length > 0) setImmediate(drain);
  else scheduled = false;
}
