import type { EventEmitter } from 'node:events';

/** Resolves on the first of the named events, each on its own emitter; every listener is removed then. */
export function firstEvent(...sources: ReadonlyArray<readonly [EventEmitter, string]>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      for (const [emitter, event] of sources) emitter.off(event, done);
      resolve();
    };
    for (const [emitter, event] of sources) emitter.on(event, done);
  });
}
