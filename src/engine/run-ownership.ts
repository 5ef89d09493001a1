import { randomUUID } from 'node:crypto';
import { isTerminalStatus, type ResponseObject } from '../protocol/responses.js';
import type { ConversationStore } from '../store/conversations.js';
import type { ResponseStore, StaleRunSettler, StoredResponse } from '../store/store.js';
import { OwnershipLost, RunCancelled, type Logger } from './types.js';
import type { Stoppable } from '../util/abort.js';

export interface OwnershipOptions {
  /** How often this process marks its runs and leases alive (and picks up cancellations). */
  heartbeatMs: number;
  /** A run or lease whose owner has been silent this long is considered dead. */
  staleAfterMs: number;
}

/** Until the heartbeat runs (an engine used on its own), a lease lasts this long. */
const UNRENEWED_LEASE_MS = 30 * 60_000;

/**
 * What this gateway process owns in the shared store, and the proof that it is alive.
 *
 * Every stored response that runs here (foreground or background) is a run owned by this process;
 * every conversation turn holds a lease. One heartbeat renews both, so a process that dies —
 * `kill -9` included — leaves nothing held for longer than `staleAfterMs`: its leases expire and
 * its runs are failed by whichever process sweeps first. A process that was only stalled finds
 * on its next heartbeat that it lost its runs, and aborts them (its writes are conditional on
 * ownership, so it could not overwrite the settled state anyway).
 */
export class RunOwnership {
  readonly owner = randomUUID();
  /** Runs of this process: aborting one stops it (cancelled, or taken over). */
  private readonly runs = new Map<string, Stoppable>();
  /** Conversation leases held by this process's turns: lease id → conversation id. */
  private readonly leases = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private skipSweeps = 0;
  /** Called after each heartbeat (the background queue is dispatched from here). */
  onTick: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: ResponseStore,
    private readonly conversations: ConversationStore | undefined,
    private readonly log: Logger,
    readonly options: OwnershipOptions,
  ) {}

  /** Fails the runs of dead processes, then keeps heart-beating and sweeping. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => {
      this.tick().catch((err: unknown) => this.log.error({ err }, 'heartbeat failed'));
    }, this.options.heartbeatMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** How long a new lease lasts: renewed each heartbeat, it outlives a dead process only briefly. */
  get leaseTtlMs(): number {
    return this.timer ? this.options.staleAfterMs : UNRENEWED_LEASE_MS;
  }

  /** Starts a foreground run of this process: registered and saved in the store (one write), then tracked. */
  async startRun(record: StoredResponse, controller: Stoppable): Promise<void> {
    // stored before tracked: a heartbeat must not find a tracked run missing and call it lost
    await this.store.startRun(record, this.owner);
    this.track(record.response.id, controller);
  }

  /** Tracks a run already registered for this owner (a background run, queued first). */
  track(id: string, controller: Stoppable): void {
    this.runs.set(id, controller);
  }

  untrack(id: string, controller?: Stoppable): void {
    // every turn ends here, tracked or not: with none tracked, a new id is not even hashed
    if (this.runs.size === 0) return;
    if (controller === undefined || this.runs.get(id) === controller) this.runs.delete(id);
  }

  isLocal(id: string): boolean {
    return this.runs.has(id);
  }

  /** Takes the conversation for one turn; undefined while another turn holds it. */
  async acquireLease(conversationId: string): Promise<string | undefined> {
    const conversations = this.conversations;
    if (!conversations) return undefined;
    const lease = `lease_${randomUUID()}`;
    if (!(await conversations.acquireTurn(conversationId, lease, this.leaseTtlMs))) return undefined;
    this.leases.set(lease, conversationId);
    return lease;
  }

  /** Releases a lease (idempotent; a lease already released in a settlement is only forgotten). */
  async releaseLease(conversationId: string, lease: string, alreadyReleased = false): Promise<void> {
    if (!this.leases.delete(lease) || alreadyReleased) return;
    await this.conversations?.releaseTurn(conversationId, lease).catch((err: unknown) => this.log.warn({ err, conversation: conversationId }, 'releasing a conversation lease failed; it expires by itself'));
  }

  private async tick(): Promise<void> {
    let beat;
    try {
      beat = await this.store.heartbeat(this.owner, [...this.runs.keys()]);
      await this.renewLeases();
    } catch (err) {
      // the database is unreachable: every replica's heartbeats are late now, so judging others
      // stale right after it comes back would fail live runs — skip the next sweep too
      this.skipSweeps = 2;
      throw err;
    }
    for (const id of beat.cancelled) this.runs.get(id)?.abort(new RunCancelled());
    for (const id of beat.lost) {
      const controller = this.runs.get(id);
      if (!controller) continue; // finished since the heartbeat's list was taken
      this.log.warn({ responseId: id }, 'another gateway process took this response over: stopping it here');
      controller.abort(new OwnershipLost());
      this.runs.delete(id);
    }
    if (this.skipSweeps > 0) this.skipSweeps--;
    else await this.sweep();
    await this.onTick?.();
  }

  private async renewLeases(): Promise<void> {
    if (!this.conversations) return;
    for (const [lease, conversationId] of this.leases) {
      // only extended, never taken: a lease that expired and was taken meanwhile is not taken back
      // (the settlement will find it lost), nor is one its turn released while this ran
      const held = await this.conversations.renewTurn(conversationId, lease, this.options.staleAfterMs);
      if (!held && this.leases.has(lease)) this.log.warn({ conversation: conversationId }, 'a conversation lease was lost (this process was silent too long)');
    }
  }

  /** Fails the runs of owners that stopped heart-beating (a restarted, dead or stalled process). */
  async sweep(): Promise<void> {
    const before = Date.now() - this.options.staleAfterMs;
    for (const id of await this.store.staleRuns(before)) {
      if (this.runs.has(id)) continue;
      // claimed and settled in one transaction: of several replicas sweeping at once, one settles it
      if (await this.store.failStaleRun(id, before, failedBySweep)) {
        this.log.warn({ responseId: id }, 'response interrupted: the gateway process running it stopped; marked failed');
      }
    }
  }
}

const STOPPED_MESSAGE = 'The gateway process running this response stopped before it finished; the response was not completed. Retry the request.';

/** The failed form of a run left behind by a dead process (with its terminal event, for a background run's log). */
export const failedBySweep: StaleRunSettler = (record, nextSequence) => failOpenRecord(record, nextSequence, STOPPED_MESSAGE);

/** Settles a stored response that is still queued or in progress as failed (`server_error`: not the client's fault). */
export function failOpenRecord(...[record, nextSequence, message]: [...Parameters<StaleRunSettler>, string]): ReturnType<StaleRunSettler> {
  if (!record || isTerminalStatus(record.response.status)) return undefined;
  const response: ResponseObject = record.response;
  response.status = 'failed';
  response.error = { code: 'server_error', message };
  response.completed_at = null;
  for (const item of response.output) if ((item as { status?: string }).status === 'in_progress') (item as { status?: string }).status = 'incomplete';
  const event = response.background ? { sequence: nextSequence, json: JSON.stringify({ type: 'response.failed', sequence_number: nextSequence, response }) } : undefined;
  return { record: { response, inputItems: record.inputItems, ...(record.owner !== undefined ? { owner: record.owner } : {}) }, event };
}

