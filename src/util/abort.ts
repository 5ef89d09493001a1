/**
 * What the turn's own code needs of an abort signal: whether and why it aborted, and being told
 * when it does. Node's AbortSignal satisfies it, and so does `TurnAbort`.
 */
export interface Cancellation {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** What a running turn is stopped with from outside (a shutdown, a lost ownership): its TurnAbort. */
export interface Stoppable {
  abort(reason?: unknown): void;
}

/**
 * A request's abort controller and its signal in one object, cheap where node's are not. On
 * Node 20 every AbortSignal gets a hidden class of its own (its prototype is set after it is
 * made): making one costs ≈ 4 µs, and every later read of `aborted` or `reason` and every listener
 * misses V8's caches — together ≈ a quarter of the gateway's own work on a short request
 * (bench/pipeline.mjs). A turn reads and watches its abort many times and nearly never aborts, so
 * this one is plain fields and a list; a real AbortSignal is made only when something asks for one
 * (`signal`: a tool call, a fetch), and follows this abort.
 */
export class TurnAbort implements Cancellation {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> = [];
  private controller: AbortController | undefined = undefined;

  /** A real AbortSignal that aborts with this one (made on first use). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** As AbortController's: the first abort wins; without a reason, an `AbortError` DOMException. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        // as an EventTarget does: the other listeners still run, the error is reported uncaught
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    this.controller?.abort(this.reason);
  }

  /** Listeners run once, on abort, in the order added; one added after the abort never runs (as on an AbortSignal). */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at !== -1) this.listeners.splice(at, 1);
  }
}

/** The AbortSignal behind `cancellation`, for APIs that need a real one (fetch, timers, the MCP SDK). */
export function abortSignalOf(cancellation: Cancellation): AbortSignal {
  return cancellation instanceof TurnAbort ? cancellation.signal : (cancellation as AbortSignal);
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts (for work that cannot itself be cancelled, such as DNS lookups). */
export function untilAborted<T>(promise: Promise<T>, signal: Cancellation): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
