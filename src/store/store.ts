import type { Item, ResponseObject } from '../protocol/responses.js';

/**
 * One stored turn: the response and the input items this request added (each with an id).
 * Items are checked on the way in (each by its type's validator, or made by the gateway), so
 * stores decode them as `Item` without checking them again.
 */
export interface StoredResponse {
  response: ResponseObject;
  inputItems: readonly Item[];
  /**
   * The tenant the response belongs to (its API key's); absent = the default tenant. Written when
   * the response is first stored and never changed; its background run and event log follow it.
   */
  owner?: string;
  /**
   * What the model saw of this turn's gateway-executed calls. Carried by in-memory caches (a
   * WebSocket connection's `store: false` turns); stores keep them apart (`saveCallRecords`).
   */
  callRecords?: GatewayCallRecord[];
  /**
   * Exactly `JSON.stringify(response)`, when the writer has already made it (a turn serialises its
   * running and its settled response once each, for its events, its row and a blocking body):
   * stores write this text rather than serialising the response again. Never read back.
   */
  responseJson?: string;
}

/**
 * The model-facing record of one gateway-executed call (web_search, MCP, …): the call and the
 * result exactly as the model saw them, keyed by the public item the call was projected into.
 * Private to the gateway: persisted beside the response, never returned to clients. Later turns
 * replay it so the model keeps what it read.
 */
export interface GatewayCallRecord {
  itemId: string;
  callId: string;
  /** The model-visible function name. */
  name: string;
  arguments: string;
  output: string;
  /** Calls the model made in one round share this (the round's first call id): replayed as one assistant turn. */
  round?: string;
}

export interface ListOptions {
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface ItemPage {
  data: Item[];
  firstId: string | null;
  lastId: string | null;
  hasMore: boolean;
}

/**
 * Persistence behind a narrow interface: SQLite embedded by default; a PostgreSQL
 * implementation of the same interface serves several gateway replicas.
 */
export interface ResponseStore {
  /** Inserts or replaces a response (the terminal status is written before the client hears it). */
  save(record: StoredResponse): Promise<void>;
  get(id: string): Promise<StoredResponse | undefined>;
  /**
   * The chain ending at `id`, oldest first (following `previous_response_id`), so a turn can
   * rebuild its conversation. Undefined when `id` is not stored.
   */
  chain(id: string): Promise<readonly StoredResponse[] | undefined>;
  delete(id: string): Promise<boolean>;
  listInputItems(id: string, options: ListOptions): Promise<ItemPage | undefined>;
  /**
   * Remembers an approval request the gateway issued, bound to a digest of its server, tool and
   * arguments — also for `store: false` turns, so an echoed request cannot be altered or reused.
   */
  recordApproval(id: string, digest: string, owner?: string): Promise<void>;
  /** Whether an approval could be used now (`ok`), or why not; changes nothing. Another tenant's is `unknown`. */
  checkApproval(id: string, digest: string, owner?: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'>;
  /** Uses an approval once, atomically: `ok`, or why not. Another tenant's is `unknown`. */
  consumeApproval(id: string, digest: string, owner?: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'>;

  /**
   * An item by its id, as stored in some response's input or output (for `item_reference`) of
   * the tenant `owner` (the default tenant when absent).
   * Scans the stored documents: meant for the rare reference, not for a hot path.
   */
  findItem(id: string, owner?: string): Promise<Item | undefined>;
  /** Keeps the model-facing records of a response's gateway calls (replaced by item id). */
  saveCallRecords(responseId: string, records: readonly GatewayCallRecord[], owner?: string): Promise<void>;
  /** The records of these public item ids that are held (deleting a response deletes its records). */
  callRecords(itemIds: readonly string[], owner?: string): Promise<GatewayCallRecord[]>;

  // Runs: every stored response that is running (foreground or background) is owned by one
  // gateway process, which heart-beats it. A run whose owner went silent is failed by another
  // (or the restarted) process; an owner that lost its claim can write nothing more (fencing).
  // Background runs wait in a FIFO queue here first, so any replica can take over a dead one's.

  /**
   * Registers a run owned by `owner` (a gateway process) from now on: running, or — with
   * `queued` — waiting in the queue with the request that starts it (kept only while queued).
   */
  registerRun(id: string, owner: string, queued?: { request: string }): Promise<void>;
  /**
   * A foreground turn starts: registers its run, running and owned by `owner`, and saves its
   * response (`in_progress`) — `registerRun` then `saveOwned`, as one write (issue 16: one commit,
   * one round trip, instead of two in front of every stored turn's first upstream call).
   */
  startRun(record: StoredResponse, owner: string): Promise<void>;
  /**
   * Marks this owner's runs alive: returns those whose cancellation was requested, and those it
   * no longer owns (failed by another process while this one was silent: it must stop).
   */
  heartbeat(owner: string, ids: readonly string[]): Promise<RunHeartbeat>;
  /** Asks the run's owner to cancel it (it may live in another replica). */
  requestCancel(id: string): Promise<void>;
  /** Running (not queued) runs whose owner has not sent a heartbeat since `before` (ms epoch). */
  staleRuns(before: number): Promise<string[]>;
  /**
   * Takes a stale run away from its owner if it is still stale and settles it with what `fail`
   * makes of the stored response (and the next event sequence number), in one transaction: true
   * for exactly one caller of several replicas sweeping at once. With `owner`: only while it is
   * still that owner's (a run of this process that ended without settling).
   */
  failStaleRun(id: string, before: number, fail: StaleRunSettler, owner?: string): Promise<boolean>;
  /**
   * The oldest queued run this owner may start — its own, or one of an owner silent since
   * `staleBefore` — becomes running, owned by `owner`. Undefined when there is none.
   */
  claimQueuedRun(owner: string, staleBefore: number): Promise<{ id: string; request: string | null } | undefined>;
  /** The run is over: it leaves the queue. */
  finishRun(id: string): Promise<void>;
  /** Saves a running response only while `owner` still owns its run; false (nothing written) if not. */
  saveOwned(record: StoredResponse, owner: string): Promise<boolean>;
  /** Ends a turn: everything in `settlement` is written in one transaction, or nothing is. */
  settle(settlement: Settlement): Promise<SettleOutcome>;
  /**
   * Appends serialized stream events of a background response (idempotent per sequence number);
   * with `owner`, only while it owns the run (false when nothing was written for that reason).
   */
  appendEvents(responseId: string, events: readonly StreamEvent[], owner?: string): Promise<boolean>;
  /** Events with sequence_number > `after`, in order. */
  eventsAfter(responseId: string, after: number): Promise<StreamEvent[]>;
  /**
   * Retention: deletes up to `limit` settled responses created before `beforeSeconds` (epoch
   * seconds), with their event logs, call records and approvals, in one transaction. Running
   * responses are kept. Returns how many responses went.
   */
  pruneResponses(beforeSeconds: number, limit: number): Promise<number>;
  close(): Promise<void>;
}

export interface StreamEvent {
  sequence: number;
  json: string;
}

export interface RunHeartbeat {
  /** Runs whose cancellation was requested (through any replica). */
  cancelled: string[];
  /** Runs this owner no longer owns: another process failed them, this one must stop. */
  lost: string[];
}

/** Makes the failed form of a stale run's response (and its terminal event, if it has a log). */
export type StaleRunSettler = (record: StoredResponse | undefined, nextSequence: number) => { record: StoredResponse; event?: StreamEvent } | undefined;

/** What a turn writes when it ends, all in one transaction. */
export interface Settlement {
  /** The settled response (absent for `store: false`). */
  record?: StoredResponse;
  /** Written only while this owner owns the run (`record`'s id), whose claim ends here. */
  owner?: string;
  /** Events not yet in the log, the terminal event last (background runs). */
  events?: readonly StreamEvent[];
  /** The conversation grows by these items; `lease`, when given, must still be held and is released. */
  conversation?: { id: string; items: Item[]; lease?: string };
  /** What the model saw of the turn's gateway calls, kept under `responseId` (see `saveCallRecords`). */
  callRecords?: { responseId: string; records: readonly GatewayCallRecord[]; owner?: string };
}

/** `ok`: all written. Otherwise nothing was written, and why. */
export type SettleOutcome = 'ok' | 'not_owner' | 'lease_lost' | 'conversation_not_found';

/** Thrown inside a store's settlement transaction to roll it back, saying why. */
export class Abandon extends Error {
  constructor(readonly outcome: SettleOutcome) {
    super(outcome);
  }
}

/** The item with `id` among a stored response's input and output items, if it is there. */
export function itemIn(record: StoredResponse, id: string): Item | undefined {
  return record.inputItems.find((item) => item.id === id) ?? record.response.output.find((item) => item.id === id);
}

/** Pages items by an `after` cursor in the requested order (shared by the implementations). */
export function pageItems(items: readonly Item[], options: ListOptions): ItemPage {
  const ordered = options.order === 'desc' ? [...items].reverse() : [...items];
  let start = 0;
  if (options.after !== undefined) {
    const index = ordered.findIndex((item) => item.id === options.after);
    start = index === -1 ? ordered.length : index + 1;
  }
  return pageFromRows(ordered.slice(start, start + options.limit + 1), options.limit);
}

/** A page from up to `limit + 1` items read in order: the extra one only says there is more. */
export function pageFromRows(rows: readonly Item[], limit: number): ItemPage {
  const data = rows.slice(0, limit);
  return {
    data,
    firstId: data.length > 0 ? data[0].id : null,
    lastId: data.length > 0 ? data[data.length - 1].id : null,
    hasMore: rows.length > limit,
  };
}
