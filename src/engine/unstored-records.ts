// What the model saw of the gateway calls of turns that were not stored (`store: false`, no
// conversation), kept in memory for a while: a client that resends such a turn's items (Codex
// over HTTP resends its whole history with every request) gets them replayed to the model as it
// first saw them, instead of "the result is gone" — and the history stays held (held-history.ts).
import type { GatewayCallRecord } from '../store/store.js';
import type { CallRecordLookup } from './types.js';

export interface UnstoredRecordsOptions {
  /** How long a record is kept after its turn; 0 = none kept. */
  ttlMs: number;
  /** The records' text at most (UTF-16 code units, ≈ bytes for the ASCII most results are); the oldest go first. */
  maxBytes: number;
}

interface KeptRecord {
  record: GatewayCallRecord;
  expiresAt: number;
  size: number;
}

/** A record's own text and its entry, roughly (ids, name, arguments, output). */
const sizeOf = (record: GatewayCallRecord) => 160 + record.itemId.length + record.callId.length + record.name.length + record.arguments.length + record.output.length;

/**
 * Records by owner and item id, in the order they were kept: all live as long, so the oldest
 * are also the first to expire. Never written anywhere: a restart or another replica has none,
 * and the model is told the result is gone, as before. Each owner (tenant) sees only its own.
 */
export class UnstoredCallRecords {
  private readonly records = new Map<string, KeptRecord>();
  private bytes = 0;
  /** `of`'s lookups, one per owner (the owners are the keys' tenants: few). */
  private readonly views = new Map<string, CallRecordLookup>();

  constructor(private readonly options: UnstoredRecordsOptions) {}

  /** Keeps the records of one turn, made by `owner`. */
  keep(records: readonly GatewayCallRecord[], owner: string, now = Date.now()): void {
    if (this.options.ttlMs === 0) return;
    this.expire(now);
    for (const record of records) {
      const size = sizeOf(record);
      if (size > this.options.maxBytes) continue;
      const key = keyOf(owner, record.itemId);
      this.drop(key);
      this.records.set(key, { record, expiresAt: now + this.options.ttlMs, size });
      this.bytes += size;
    }
    for (const [key] of this.records) {
      if (this.bytes <= this.options.maxBytes) break;
      this.drop(key);
    }
  }

  /** The records `owner` may see. */
  of(owner: string): CallRecordLookup {
    let view = this.views.get(owner);
    if (view === undefined) {
      if (this.views.size >= 1_024) this.views.clear();
      view = { get: (itemId) => this.find(owner, itemId) };
      this.views.set(owner, view);
    }
    return view;
  }

  get size(): number {
    return this.records.size;
  }

  /** `owner`'s record of the call `itemId`, if held and not expired at `now`. */
  find(owner: string, itemId: string, now = Date.now()): GatewayCallRecord | undefined {
    const kept = this.records.get(keyOf(owner, itemId));
    return kept !== undefined && kept.expiresAt > now ? kept.record : undefined;
  }

  private expire(now: number): void {
    for (const [key, kept] of this.records) {
      if (kept.expiresAt > now) break;
      this.drop(key);
    }
  }

  private drop(key: string): void {
    const kept = this.records.get(key);
    if (kept === undefined) return;
    this.records.delete(key);
    this.bytes -= kept.size;
  }
}

const keyOf = (owner: string, itemId: string) => `${owner}\u0000${itemId}`;

/** No records: a lookup that finds none. */
export const NO_RECORDS: CallRecordLookup = { get: () => undefined };
