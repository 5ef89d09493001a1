// undici 7 (the last line that runs on Node 20) connects again for a request that was aborted in
// flight: aborting destroys the socket with an informational error, and when the socket closes
// the client puts the aborted request back among its pending ones and opens a new connection for
// it before it notices the request is aborted (nodejs/undici#5845; undici 8.14 checks first, but
// needs Node 22). Every stream a client abandons — a user pressing stop, an agent interrupting a
// turn — would cost a connection to the model server that nothing uses, 1,000 streams dropped at
// once 1,000 connects in the middle of the burst (bench/README.md, stop 34), and every page or
// image fetch cut short (a size cap, a timeout) a connection to a third party's server. The
// gateway's undici dispatchers make their clients here, and these drop such requests before they
// resume, as undici 8 does.
import { Client, Pool, type Dispatcher } from 'undici';
// undici publishes no exports map: its internal symbols are importable, and pinned with it
import undiciSymbols from 'undici/lib/core/symbols.js';

const { kQueue, kPendingIdx, kResume, kResuming } = undiciSymbols;

/** `client[kResuming]` while undici's resume loop runs (lib/dispatcher/client.js `resume`). */
const RESUMING = 2;

interface QueuedRequest {
  aborted: boolean;
}

interface ClientInternals {
  [key: symbol]: unknown;
}

/** A `Pool` factory: an undici `Client` that never connects for a request that is already aborted. */
export function clientForPool(origin: URL, options: object): Dispatcher {
  const client = new Client(origin, options);
  const internals = client as unknown as ClientInternals;
  const resume = internals[kResume];
  // another undici than the one pinned (no such internals): it is left as it is
  if (typeof resume !== 'function' || typeof kResuming !== 'symbol' || !Array.isArray(internals[kQueue]) || typeof internals[kPendingIdx] !== 'number') return client;
  internals[kResume] = (sync?: boolean) => {
    // undici calls this again from inside its own resume loop (after writing a body), with the
    // request being written still at the pending index: that loop drops an aborted request itself,
    // and the resume call returns at once — nothing may move under it (found by a second review)
    if (internals[kResuming] !== RESUMING) {
      const queue = internals[kQueue] as Array<QueuedRequest | null>;
      const at = internals[kPendingIdx] as number;
      // the aborted requests at the head of the pending ones: their handlers have heard of the
      // abort already, and none will be written (undici would drop them after connecting)
      while (at < queue.length && queue[at]?.aborted === true) queue.splice(at, 1);
    }
    return (resume as (sync?: boolean) => unknown).call(client, sync);
  };
  return client;
}

/** An `Agent` factory: a pool per origin whose clients are `clientForPool`'s. */
export function poolForAgent(origin: URL | string, options: object): Dispatcher {
  return new Pool(origin, { ...options, factory: clientForPool });
}
