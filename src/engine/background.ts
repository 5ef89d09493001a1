import { GatewayError } from '../errors.js';
import { isTerminalStatus, type ResponseObject } from '../protocol/responses.js';
import type { ResponseStore, StreamEvent } from '../store/store.js';
import { failOpenRecord, type RunOwnership } from './run-ownership.js';
import type { Engine } from './turn.js';
import { GatewayShutdown, OwnershipLost, RunCancelled, type EventSink, type Logger, type PreparedTurn } from './types.js';
import { TurnAbort } from '../util/abort.js';

export interface BackgroundOptions {
  /** At most this many background runs run at once in this process; the others wait, queued. */
  maxConcurrent: number;
  /** A queued run whose owner has been silent this long is taken over by another process. */
  staleAfterMs: number;
}

type Listener = (sequence: number, json: string) => void;

interface LocalRun {
  id: string;
  /** The response as stored when queued. */
  response: ResponseObject;
  /** Queued until a slot is free (the store's FIFO queue decides which run is next). */
  state: 'queued' | 'running';
  turn: PreparedTurn;
  controller: TurnAbort;
  listeners: Set<Listener>;
  /** Events not yet written to the store (flushed once per tick). */
  pending: StreamEvent[];
  /** The chain of event-log writes (one at a time, in order). */
  flushing: Promise<void>;
  /** The settlement wrote the log through this sequence number (its events are not written again). */
  loggedThrough: number;
  done: Promise<ResponseObject>;
  settleDone: (result: Promise<ResponseObject>) => void;
}

const TERMINAL = /^response\.(completed|incomplete|failed)$/;

/** The most that an owner's last words may be: a run that ended here without settling is failed. */
const STOPPED_UNEXPECTEDLY = 'The background response stopped unexpectedly before it finished.';

/**
 * Background runs (`background: true`): the run proceeds in a gateway process while the client
 * polls or streams. A run waits in the store's FIFO queue until this process has a free slot
 * (`background.maxConcurrent`); a dead process's queued runs are taken over by another. Every
 * event goes to the store's event log (batched per tick), so
 * `GET /v1/responses/{id}?stream=true&starting_after=N` resumes from any replica; the terminal
 * state is stored in one transaction with the rest of the log, so a follower that sees it finds
 * the terminal event. Runs are owned and heart-beaten (RunOwnership): a run whose process died is
 * failed, never left `in_progress`, and a stalled owner that lost its run stops and writes nothing.
 */
export class BackgroundRunner {
  private readonly runs = new Map<string, LocalRun>();
  private readonly ownership: RunOwnership;
  private running = 0;
  private dispatching = false;
  private dispatchAgain = false;
  private closed = false;

  constructor(
    private readonly engine: Engine,
    private readonly store: ResponseStore,
    private readonly log: Logger,
    private readonly options: BackgroundOptions,
  ) {
    this.ownership = engine.ownership;
  }

  get owner(): string {
    return this.ownership.owner;
  }

  /** Starts queued runs on every heartbeat (some may be a dead process's). */
  start(): void {
    this.ownership.onTick = () => this.dispatch();
  }

  /**
   * Stores the response as queued, enqueues the run and starts it when a slot is free. `live`
   * also receives the events (a client that asked to stream the background response as it runs).
   */
  async launch(turn: PreparedTurn, live?: EventSink): Promise<{ response: ResponseObject; done: Promise<ResponseObject> }> {
    const response = this.engine.newResponse(turn);
    const run = this.localRun(response, turn);
    try {
      // registered first: a cancel can find the run as soon as the response exists
      this.runs.set(run.id, run);
      await this.store.registerRun(run.id, this.owner, { request: JSON.stringify(turn.body) });
      // tracked once stored: a heartbeat must not find a tracked run missing and call it lost
      this.ownership.track(run.id, run.controller);
      await this.store.save({ response: structuredClone(response), inputItems: turn.inputItems, owner: turn.tenant });
    } catch (err) {
      // not launched: nothing may stay held or queued
      this.runs.delete(run.id);
      this.ownership.untrack(run.id, run.controller);
      await this.engine.release(turn);
      await this.store.finishRun(run.id).catch(() => undefined);
      throw err;
    }
    if (live) run.listeners.add((_seq, json) => live(typeOf(json), json));
    void this.dispatch();
    return { response: structuredClone(response), done: run.done };
  }

  /** Runs executing in this gateway now (the background queue depth metric). */
  get activeRuns(): number {
    return this.runs.size;
  }

  /** Cancels a run: here if it runs (or waits) here, else through the store for its owner to see. */
  async cancel(id: string): Promise<ResponseObject | undefined> {
    const local = this.runs.get(id);
    if (local) {
      local.controller.abort(new RunCancelled());
      return local.done;
    }
    await this.store.requestCancel(id);
    return undefined;
  }

  private localRun(response: ResponseObject, turn: PreparedTurn): LocalRun {
    let settleDone!: (result: Promise<ResponseObject>) => void;
    const done = new Promise<ResponseObject>((resolve) => (settleDone = resolve));
    done.catch((err: unknown) => this.log.error({ err, responseId: response.id }, 'background run failed'));
    const run: LocalRun = { id: response.id, response, state: 'queued', turn, controller: new TurnAbort(), listeners: new Set(), pending: [], flushing: Promise.resolve(), loggedThrough: -1, done, settleDone };
    // a queued run that is cancelled (here or through another replica) settles at once, slot or not
    run.controller.addEventListener('abort', () => {
      if (run.state === 'queued' && !this.closed) this.startRun(run);
    }, { once: true });
    return run;
  }

  /** Starts the next queued runs (FIFO, from the store) while this process has free slots. */
  private async dispatch(): Promise<void> {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    this.dispatching = true;
    try {
      do {
        this.dispatchAgain = false;
        while (!this.closed && this.running < this.options.maxConcurrent) {
          const claim = await this.store.claimQueuedRun(this.owner, Date.now() - this.options.staleAfterMs);
          if (!claim) break;
          const local = this.runs.get(claim.id);
          if (local?.state === 'queued') this.startRun(local);
          else if (!local) await this.takeOver(claim.id, claim.request);
        }
      } while (this.dispatchAgain && !this.closed);
    } catch (err) {
      this.log.error({ err }, 'starting queued background runs failed; retried on the next heartbeat');
    } finally {
      this.dispatching = false;
    }
  }

  /** A queued run of a process that died: prepared again here from its stored request, then run. */
  private async takeOver(id: string, request: string | null): Promise<void> {
    const record = await this.store.get(id);
    if (!record || isTerminalStatus(record.response.status)) {
      await this.store.finishRun(id);
      return;
    }
    this.log.warn({ responseId: id }, 'taking over a queued background response of a gateway process that stopped');
    let turn: PreparedTurn;
    try {
      if (request === null) throw new Error('the queued request was not stored');
      turn = await this.engine.prepare(JSON.parse(request), undefined, { tenant: record.owner });
    } catch (err) {
      const message = err instanceof GatewayError ? err.message : 'The gateway process that queued this background response stopped, and it could not be started again.';
      await this.store.failStaleRun(id, Number.MAX_SAFE_INTEGER, (stored, next) => failOpenRecord(stored, next, message), this.owner);
      return;
    }
    // the input items as first stored: prepared again, they would have new ids
    const run = this.localRun(record.response, { ...turn, inputItems: record.inputItems });
    this.runs.set(id, run);
    this.ownership.track(id, run.controller);
    this.startRun(run);
  }

  private startRun(run: LocalRun): void {
    run.state = 'running';
    this.running++;
    const sink: EventSink = (_type, json) => this.record(run, json);
    const result = this.engine
      .run(run.turn, sink, run.controller, undefined, {
        response: run.response,
        controller: run.controller,
        unloggedEvents: () => this.unlogged(run),
        logged: (sequence) => {
          run.loggedThrough = Math.max(run.loggedThrough, sequence);
          run.pending = run.pending.filter((e) => e.sequence > sequence);
        },
      })
      .finally(async () => {
        await this.flush(run);
        this.runs.delete(run.id);
        this.ownership.untrack(run.id, run.controller);
        this.running--;
        // a run that ended here without settling (a bug or a store failure) must not stay open
        if (!(run.controller.reason instanceof OwnershipLost)) {
          await this.store
            .failStaleRun(run.id, Number.MAX_SAFE_INTEGER, (stored, next) => failOpenRecord(stored, next, STOPPED_UNEXPECTEDLY), this.owner)
            .catch(() => undefined);
        }
        if (!this.closed) void this.dispatch();
      });
    run.settleDone(result);
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
        if (!record || isTerminalStatus(record.response.status)) {
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

  /** Stops running runs (failed: the gateway shut down); queued ones stay queued for another process. */
  async close(): Promise<void> {
    this.closed = true;
    const runs = [...this.runs.values()];
    for (const run of runs) {
      if (run.state === 'running') run.controller.abort(new GatewayShutdown());
      else await this.engine.release(run.turn);
    }
    await Promise.allSettled(runs.filter((r) => r.state === 'running').map((r) => r.done));
  }

  private record(run: LocalRun, json: string): void {
    const sequence = sequenceOf(json);
    if (sequence > run.loggedThrough) {
      if (run.pending.length === 0) queueMicrotask(() => void this.flush(run));
      run.pending.push({ sequence, json });
    }
    for (const listener of run.listeners) listener(sequence, json);
  }

  /** The events not yet in the log, once the writes under way have ended (no gap before them). */
  private async unlogged(run: LocalRun): Promise<StreamEvent[]> {
    await run.flushing;
    return [...run.pending];
  }

  /** Writes pending events; writes of one run are chained, so the log grows in sequence order. */
  private flush(run: LocalRun): Promise<void> {
    run.flushing = run.flushing.then(() => this.flushNow(run));
    return run.flushing;
  }

  private async flushNow(run: LocalRun): Promise<void> {
    if (run.pending.length === 0) return;
    const events = run.pending;
    run.pending = [];
    try {
      if (!(await this.store.appendEvents(run.id, events, this.owner))) {
        // already in the log: the settlement wrote them (and ended the claim) meanwhile
        if (events.every((e) => e.sequence <= run.loggedThrough)) return;
        // another process failed this run while this one was silent: stop, write nothing more
        if (!run.controller.aborted) run.controller.abort(new OwnershipLost());
        run.pending = [];
      }
    } catch (err) {
      // kept for the next flush (appends are idempotent per sequence number): resumers see no gap
      run.pending = [...events, ...run.pending];
      this.log.error({ err, responseId: run.id }, 'writing background events failed; will retry');
      if (run.pending.length === events.length) setTimeout(() => void this.flush(run), 500).unref();
    }
  }
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
