import { isTerminalStatus } from '../protocol/responses.js';
import type { GatewayCallRecord, StoredResponse } from './store.js';
import { deepFreeze } from '../util/freeze.js';
import { DEFAULT_TENANT } from './tenant.js';

/** A response row as a store writes it: the JSON texts are what later reads decode. */
export interface ResponseRow {
  id: string;
  previous: string | null;
  status: string;
  createdAt: number;
  response: string;
  inputItems: string;
  owner: string;
}

/**
 * The JSON of each turn's input items, by the list: a turn's list is made once (when it is
 * prepared) and never changed, and its row is written twice, running and settled. Kept while the
 * list lives (the run, or a background run's time in the queue), so a long one is not kept.
 */
const inputItemsJsonOfList = new WeakMap<readonly unknown[], string>();
const KEPT_INPUT_ITEMS_CHARS = 256 * 1024;

/** The row a store writes for a record (serialised once, shared by the write and the chain cache). */
export function responseRow(record: StoredResponse): ResponseRow {
  const r = record.response;
  let inputItems = inputItemsJsonOfList.get(record.inputItems);
  if (inputItems === undefined) {
    inputItems = JSON.stringify(record.inputItems);
    if (inputItems.length <= KEPT_INPUT_ITEMS_CHARS) inputItemsJsonOfList.set(record.inputItems, inputItems);
  }
  return {
    id: r.id,
    previous: r.previous_response_id,
    status: r.status,
    createdAt: r.created_at,
    response: record.responseJson ?? JSON.stringify(r),
    inputItems,
    owner: record.owner ?? DEFAULT_TENANT,
  };
}

/** A response read from the store, with the model-facing records of its gateway calls read with it (as the chain cache holds records). */
export function withCallRecords(stored: StoredResponse, callRecords: GatewayCallRecord[]): StoredResponse {
  if (callRecords.length > 0) stored.callRecords = callRecords;
  return stored;
}

/** About what a call record keeps alive: a page the model read can be far larger than its public item. */
function recordBytes(record: GatewayCallRecord): number {
  return record.itemId.length + record.callId.length + record.name.length + record.arguments.length + record.output.length + (record.round?.length ?? 0);
}

/** Default budget of a store's chain cache: a 5 MB chain (1,000 turns of 5 KB) fits a dozen times. */
export const DEFAULT_CHAIN_CACHE_BYTES = 64 * 1024 * 1024;


interface Entry {
  chain: readonly StoredResponse[];
  /** The JSON text of the whole chain and its call records, about what the entry keeps alive. */
  bytes: number;
  /** The store's deletion epoch the chain was valid at. */
  epoch: number;
}

/**
 * Settled `previous_response_id` chains, most recently used kept (issue 16: a continued turn must
 * not re-read and re-parse its whole history). An entry is exactly what the store's `chain(id)`
 * returns — records decoded from the JSON the store wrote, deep-frozen so no reader can change
 * what the next turn sees — and a settled response written on top of a held chain extends it by
 * its one record. Entries are valid while the store's deletion epoch is what it was when the chain
 * was read: a delete or a retention sweep (on any replica) bumps the epoch, and the next read
 * goes to the database again. Responses still running are never held (their record changes).
 */
export class ChainCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The chain ending at `id` if it is held and still valid at `epoch`. */
  get(id: string, epoch: number): readonly StoredResponse[] | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.epoch !== epoch) {
      this.drop(id, entry);
      return undefined;
    }
    // most recently used last: Map keeps insertion order
    this.entries.delete(id);
    this.entries.set(id, entry);
    return entry.chain;
  }

  /** Holds a chain just read whole from the store, when its tip is settled. */
  fill(chain: readonly StoredResponse[], bytes: number, epoch: number): void {
    const tip = chain.at(-1);
    // a chain larger than the whole budget is not kept (nor frozen: the reader may keep it as its own)
    if (tip === undefined || !isTerminalStatus(tip.response.status) || bytes > this.maxBytes) return;
    for (const record of chain) deepFreeze(record);
    this.put(tip.response.id, { chain, bytes, epoch });
  }

  /**
   * A response row was written (committed): when it is settled and its previous response's chain
   * is held, the chain extended by it is held too, with the model-facing records of its gateway
   * calls when the write carried them (a later turn replays its calls from them). A held response
   * written again is a change the held chains may not reflect: everything is dropped.
   */
  written(row: ResponseRow, callRecords?: readonly GatewayCallRecord[]): void {
    if (this.entries.has(row.id)) {
      this.clear();
      return;
    }
    if (!isTerminalStatus(row.status) || row.previous === null) return;
    const parent = this.entries.get(row.previous);
    if (parent === undefined) return;
    const record: StoredResponse = { response: JSON.parse(row.response), inputItems: JSON.parse(row.inputItems), owner: row.owner };
    let recordsBytes = 0;
    if (callRecords?.length) {
      // copies: the run that made them is not frozen with the record
      record.callRecords = callRecords.map((callRecord) => ({ ...callRecord }));
      for (const callRecord of callRecords) recordsBytes += recordBytes(callRecord);
    }
    deepFreeze(record);
    this.put(row.id, { chain: [...parent.chain, record], bytes: parent.bytes + row.response.length + row.inputItems.length + recordsBytes, epoch: parent.epoch });
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private put(id: string, entry: Entry): void {
    // a chain larger than the whole budget is not worth evicting everything else for
    if (entry.bytes > this.maxBytes) return;
    const existing = this.entries.get(id);
    if (existing) this.drop(id, existing);
    this.entries.set(id, entry);
    this.bytes += entry.bytes;
    for (const [oldId, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldId, old);
    }
  }

  private drop(id: string, entry: Entry): void {
    this.entries.delete(id);
    this.bytes -= entry.bytes;
  }
}
