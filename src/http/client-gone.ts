import type { HttpResponse } from './exchange.js';
import { later } from './loop-slices.js';
import { TurnAbort } from '../util/abort.js';

/**
 * An abort controller that fires when the client goes away before its answer is complete (to
 * stop discovery, the upstream request and every tool call in flight). `release` stops watching.
 * The abort comes within the next event-loop turns, time-sliced (`later`): a burst of closes
 * does not hold the loop for all of them at once.
 */
export function abortWhenClientLeaves(res: HttpResponse): { controller: TurnAbort; release: () => void } {
  const controller = new TurnAbort();
  const onClose = () => {
    if (!res.writableFinished) later(() => controller.abort());
  };
  res.on('close', onClose);
  return { controller, release: () => res.off('close', onClose) };
}
