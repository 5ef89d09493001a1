import type { ServerResponse } from 'node:http';

/**
 * An abort controller that fires when the client goes away before its answer is complete (to
 * stop discovery, the upstream request and every tool call in flight). `release` stops watching.
 */
export function abortWhenClientLeaves(res: ServerResponse): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  res.on('close', onClose);
  return { controller, release: () => res.off('close', onClose) };
}
