import { randomUUID } from 'node:crypto';
import type { ResponseObject } from '../protocol/responses.js';
import type { ResponseStore } from '../store/store.js';
import type { EventSink } from './accumulator.js';
import { GatewayShutdown, RunCancelled, type Engine, type Logger, type PreparedTurn } from './turn.js';

export interface BackgroundOptions {
  /** How often a running replica marks its runs alive (and picks up cancellations). */
  heartbeatMs: number;
  /** A run whose owner has been silent this long is considered dead and is failed. */
  staleAfterMs: number;
}

type Listener = (sequence: number, json: string) => void;

interface LocalRun {
  controller: AbortController;
  listeners: Set<Listener>;
  /** Events not yet written to the store (flushed once per tick). */
  pending: Array<{ sequence: number; json: string }>;
  /** The chain of event-log writes (one at a time, in order). */
  flushing: Promise<void>;
  done: Promise<ResponseObject>;
}

const TERMINAL = /^response\.(completed|incomplete|failed)$/;

/**
 * Background runs (`background: true`): the run proceeds in this gateway while the client polls
 * or streams. Every event goes to the store's event log (batched per tick), so
 * `GET /v1/responses/{id}?stream=true&starting_after=N` resumes from any replica; runs carry an
 * owner and a heartbeat, so a run whose gateway died — a restart included — is found and failed,
 * never left `in_progress`.
 */
export class BackgroundRunner {
  readonly owner = randomUUID();
  private readonly runs = new Map<string, LocalRun>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly store: ResponseStore,
    private readonly log: Logger,
    private readonly options: BackgroundOptions,
  ) {}

  /** Fails runs left behind by dead gateways, then keeps heart-beating and sweeping. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => {
      this.tick().catch((err: unknown) => this.log.error({ err }, 'background heartbeat failed'));
    }, this.options.heartbeatMs);
    this.timer.unref();
  }

  /**
   * Stores the queued response, registers the run and starts it. `live` also receives the events
   * (a client that asked to stream the background response as it runs).
   */
  async launch(turn: PreparedTurn, live?: EventSink): Promise<{ response: ResponseObject; done: Promise<ResponseObject> }> {
    const response = this.engine.newResponse(turn);
    // registered first: a cancel or a sweep can find the run as soon as the response exists
    await this.store.registerRun(response.id, this.owner);
    await this.store.save({ response: structuredClone(response), inputItems: turn.inputItems });
    const run: LocalRun = { controller: new AbortController(), listeners: new Set(), pending: [], flushing: Promise.resolve(), done: undefined as unknown as Promise<ResponseObject> };
    this.runs.set(response.id, run);
    if (live) run.listeners.add((_seq, json) => live(typeOf(json), json));
    const sink: EventSink = (_type, json) => this.record(response.id, run, json);
    run.done = this.engine
      .run(turn, sink, run.controller.signal, undefined, { response })
      .finally(async () => {
        await this.flush(response.id, run);
        this.runs.delete(response.id);
        // a run that ended without settling (a bug or a store failure) must not stay queued
        await this.markFailedIfOpen(response.id, 'The background response stopped unexpectedly before it finished.').catch(() => undefined);
        await this.store.finishRun(response.id);
      });
    run.done.catch((err: unknown) => this.log.error({ err, responseId: response.id }, 'background run failed'));
    return { response: structuredClone(response), done: run.done };
  }

  /** Runs executing in this gateway now (the background queue depth metric). */
  get activeRuns(): number {
    return this.runs.size;
  }

  /** Cancels a run: here if it runs here, else through the store for its owner to see. */
  async cancel(id: string): Promise<ResponseObject | undefined> {
    const local = this.runs.get(id);
    if (local) {
      local.controller.abort(new RunCancelled());
      return local.done;
    }
    await this.store.requestCancel(id);
    return undefined;
  }

  /**
   * Follows a response's event stream after `after`: what the log holds, then live events (this
   * replica) or the log as it grows (another replica), until the terminal event.
   */
  async follow(id: string, after: number, write: (json: string) => void, signal: AbortSignal): Promise<void> {
    let last = after;
    let finished = false;
    // strictly in sequence: an event past a gap waits until the gap is filled (a later read)
    const deliver = (sequence: number, json: string) => {
      if (sequence !== last + 1) return;
      last = sequence;
      write(json);
      if (TERMINAL.test(typeOf(json))) finished = true;
    };
    const local = this.runs.get(id);
    const buffered: Array<{ sequence: number; json: string }> = [];
    let replaying = true;
    let pollMs = 100;
    let wake: (() => void) | undefined;
    const listener: Listener = (sequence, json) => {
      if (replaying) buffered.push({ sequence, json });
      else deliver(sequence, json);
      wake?.();
    };
    const onAbort = () => wake?.();
    // one listener each for the run's end and the follower's abort, for the whole follow
    let localDone = local === undefined;
    const settled = () => {
      localDone = true;
      wake?.();
    };
    local?.done.then(settled, settled);
    signal.addEventListener('abort', onAbort, { once: true });
    // subscribe before reading the log, so nothing falls between the two
    local?.listeners.add(listener);
    try {
      for (const e of await this.store.eventsAfter(id, last)) deliver(e.sequence, e.json);
      if (local) for (const e of local.pending) deliver(e.sequence, e.json);
      for (const e of buffered) deliver(e.sequence, e.json);
      replaying = false;
      while (!finished && !signal.aborted) {
        if (!localDone) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        // the run is over here, or runs elsewhere: the log is the source of truth
        const before = last;
        for (const e of await this.store.eventsAfter(id, last)) deliver(e.sequence, e.json);
        if (finished || local) break;
        const record = await this.store.get(id);
        if (!record || isTerminal(record.response.status)) {
          for (const e of await this.store.eventsAfter(id, last)) deliver(e.sequence, e.json);
          break;
        }
        // poll quickly while events flow, back off (to 1 s) while the run is quiet
        pollMs = last > before ? 100 : Math.min(1_000, pollMs * 1.5);
        await delay(pollMs, signal);
      }
    } finally {
      local?.listeners.delete(listener);
      signal.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const run of this.runs.values()) run.controller.abort(new GatewayShutdown());
    await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  private record(id: string, run: LocalRun, json: string): void {
    const sequence = sequenceOf(json);
    if (run.pending.length === 0) queueMicrotask(() => void this.flush(id, run));
    run.pending.push({ sequence, json });
    for (const listener of run.listeners) listener(sequence, json);
  }

  /** Writes pending events; writes of one run are chained, so the log grows in sequence order. */
  private flush(id: string, run: LocalRun): Promise<void> {
    run.flushing = run.flushing.then(() => this.flushNow(id, run));
    return run.flushing;
  }

  private async flushNow(id: string, run: LocalRun): Promise<void> {
    if (run.pending.length === 0) return;
    const events = run.pending;
    run.pending = [];
    try {
      await this.store.appendEvents(id, events);
    } catch (err) {
      // kept for the next flush (appends are idempotent per sequence number): resumers see no gap
      run.pending = [...events, ...run.pending];
      this.log.error({ err, responseId: id }, 'writing background events failed; will retry');
      if (run.pending.length === events.length) setTimeout(() => void this.flush(id, run), 500).unref();
    }
  }

  private async tick(): Promise<void> {
    let cancelled: string[];
    try {
      cancelled = await this.store.heartbeat(this.owner, [...this.runs.keys()]);
    } catch (err) {
      // the database is unreachable: every replica's heartbeats are late now, so judging others
      // stale right after it comes back would fail live runs — skip the next sweep too
      this.skipSweeps = 2;
      throw err;
    }
    for (const id of cancelled) this.runs.get(id)?.controller.abort(new RunCancelled());
    if (this.skipSweeps > 0) {
      this.skipSweeps--;
      return;
    }
    await this.sweep();
  }

  private skipSweeps = 0;

  /** Fails the runs of owners that stopped heart-beating (a restarted or dead gateway). */
  private async sweep(): Promise<void> {
    const before = Date.now() - this.options.staleAfterMs;
    for (const id of await this.store.staleRuns(before)) {
      if (this.runs.has(id)) continue;
      // claimed atomically: of several replicas sweeping at once, one settles the run
      if (!(await this.store.claimStaleRun(id, before))) continue;
      if (await this.markFailedIfOpen(id, 'The gateway running this background response stopped before it finished; the response was not completed.')) {
        this.log.warn({ responseId: id }, 'background response interrupted by a gateway restart: marked failed');
      }
    }
  }

  /** Settles a stored response that is still queued or in progress as failed, with its terminal event. */
  private async markFailedIfOpen(id: string, message: string): Promise<boolean> {
    const record = await this.store.get(id);
    if (!record || isTerminal(record.response.status)) return false;
    const response = record.response;
    response.status = 'failed';
    response.error = { code: 'server_error', message };
    for (const item of response.output) if ((item as { status?: string }).status === 'in_progress') (item as { status?: string }).status = 'incomplete';
    await this.store.save({ response, inputItems: record.inputItems });
    const [lastEvent] = (await this.store.eventsAfter(id, -1)).slice(-1);
    const sequence = lastEvent ? lastEvent.sequence + 1 : 0;
    await this.store.appendEvents(id, [{ sequence, json: JSON.stringify({ type: 'response.failed', sequence_number: sequence, response }) }]);
    return true;
  }
}

function isTerminal(status: string): boolean {
  return status === 'completed' || status === 'incomplete' || status === 'failed' || status === 'cancelled';
}

// The event JSON starts with `{"type":"…","sequence_number":N` (see ResponseAccumulator).
function typeOf(json: string): string {
  const end = json.indexOf('"', 9);
  return json.slice(9, end);
}

function sequenceOf(json: string): number {
  const at = json.indexOf('"sequence_number":') + 18;
  return parseInt(json.slice(at, at + 12), 10);
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
