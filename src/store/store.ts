import type { Item, ResponseObject } from '../protocol/responses.js';

/** One stored turn: the response and the input items this request added (each with an id). */
export interface StoredResponse {
  response: ResponseObject;
  inputItems: Item[];
  /**
   * What the model saw of this turn's gateway-executed calls. Carried by in-memory caches (a
   * WebSocket connection's `store: false` turns); stores keep them apart (`saveCallRecords`).
   */
  callRecords?: GatewayCallRecord[];
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
  chain(id: string): Promise<StoredResponse[] | undefined>;
  delete(id: string): Promise<boolean>;
  listInputItems(id: string, options: ListOptions): Promise<ItemPage | undefined>;
  /**
   * Remembers an approval request the gateway issued, bound to a digest of its server, tool and
   * arguments — also for `store: false` turns, so an echoed request cannot be altered or reused.
   */
  recordApproval(id: string, digest: string): Promise<void>;
  /** Whether an approval could be used now (`ok`), or why not; changes nothing. */
  checkApproval(id: string, digest: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'>;
  /** Uses an approval once, atomically: `ok`, or why not. */
  consumeApproval(id: string, digest: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'>;

  /**
   * An item by its id, as stored in some response's input or output (for `item_reference`).
   * Scans the stored documents: meant for the rare reference, not for a hot path.
   */
  findItem(id: string): Promise<Item | undefined>;
  /** Keeps the model-facing records of a response's gateway calls (replaced by item id). */
  saveCallRecords(responseId: string, records: readonly GatewayCallRecord[]): Promise<void>;
  /** The records of these public item ids that are held (deleting a response deletes its records). */
  callRecords(itemIds: readonly string[]): Promise<GatewayCallRecord[]>;

  // Background runs: the queue and the event log live here, so any replica can serve a resume
  // and a dead replica's runs can be found and failed.

  /** Registers a background run, owned by `owner` (a gateway process) from now on. */
  registerRun(id: string, owner: string): Promise<void>;
  /** Marks this owner's runs alive; returns those of them whose cancellation was requested. */
  heartbeat(owner: string, ids: readonly string[]): Promise<string[]>;
  /** Asks the run's owner to cancel it (it may live in another replica). */
  requestCancel(id: string): Promise<void>;
  /** Runs not yet finished whose owner has not sent a heartbeat since `before` (ms epoch). */
  staleRuns(before: number): Promise<string[]>;
  /**
   * Takes a stale run out of the queue if it is still stale: true for exactly one caller, so of
   * several replicas sweeping at once only one settles it.
   */
  claimStaleRun(id: string, before: number): Promise<boolean>;
  /** The run is over: it leaves the queue. */
  finishRun(id: string): Promise<void>;
  /** Appends serialized stream events of a background response. */
  appendEvents(responseId: string, events: ReadonlyArray<{ sequence: number; json: string }>): Promise<void>;
  /** Events with sequence_number > `after`, in order. */
  eventsAfter(responseId: string, after: number): Promise<Array<{ sequence: number; json: string }>>;
  close(): Promise<void>;
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
