import type Database from 'better-sqlite3';
import { SqliteWriteBatches } from './sqlite-batches.js';
import { ChainCache, DEFAULT_CHAIN_CACHE_BYTES, responseRow, withCallRecords, type ResponseRow } from './chain-cache.js';
import { DEFAULT_TENANT } from './tenant.js';
import { SqliteConversationWriter } from './sqlite-conversations.js';
import { openDatabase } from './sqlite-file.js';
import { migrateSqlite } from './sqlite-schema.js';
import type { Item } from '../protocol/responses.js';
import {
  Abandon,
  itemIn,
  pageItems,
  type GatewayCallRecord,
  type ItemPage,
  type ListOptions,
  type ResponseStore,
  type RunHeartbeat,
  type Settlement,
  type SettleOutcome,
  type StaleRunSettler,
  type StoredResponse,
  type StreamEvent,
} from './store.js';

/**
 * The embedded store: one SQLite file (WAL) in the data folder. better-sqlite3 is synchronous;
 * each call is a single indexed statement, far below a millisecond.
 */
export class SqliteResponseStore implements ResponseStore {
  /** The connection: a `SqliteConversationStore` built on it shares its transactions. */
  readonly database: Database.Database;
  private readonly upsert: Database.Statement;
  private readonly selectOne: Database.Statement;
  private readonly selectChain: Database.Statement;
  private readonly deleteOne: Database.Statement;
  private readonly insertApproval: Database.Statement;
  private readonly useApproval: Database.Statement;
  private readonly selectApproval: Database.Statement;
  private readonly insertRun: Database.Statement;
  private readonly touchRun: Database.Statement;
  private readonly cancelRun: Database.Statement;
  private readonly selectStale: Database.Statement;
  private readonly deleteRun: Database.Statement;
  private readonly ownsRun: Database.Statement;
  private readonly claimStale: Database.Statement;
  private readonly selectQueued: Database.Statement;
  private readonly startQueued: Database.Statement;
  private readonly lastSequence: Database.Statement;
  private readonly conversationWriter: SqliteConversationWriter;
  private readonly insertEvent: Database.Statement;
  private readonly selectEvents: Database.Statement;
  private readonly deleteEvents: Database.Statement;
  private readonly upsertCallRecord: Database.Statement;
  private readonly deleteCallRecords: Database.Statement;
  private readonly selectExpired: Database.Statement;
  private readonly pruneApprovals: Database.Statement;
  private readonly selectDeletions: Database.Statement;
  private readonly bumpDeletions: Database.Statement;
  /** Writes of the hot path (runs, running and settled responses), group-committed per loop turn. */
  private readonly batches: SqliteWriteBatches;
  /** Settled chains already read or written, so a continued turn does not re-read its whole history. */
  private readonly chains: ChainCache;

  constructor(dataDir: string | ':memory:', options: { chainCacheBytes?: number } = {}) {
    this.database = openDatabase(dataDir);
    migrateSqlite(this.database);
    this.batches = new SqliteWriteBatches(this.database);
    this.chains = new ChainCache(options.chainCacheBytes ?? DEFAULT_CHAIN_CACHE_BYTES);
    this.selectDeletions = this.database.prepare("SELECT value FROM store_epochs WHERE name = 'deletions'").pluck();
    this.bumpDeletions = this.database.prepare("UPDATE store_epochs SET value = value + 1 WHERE name = 'deletions'");
    this.insertApproval = this.database.prepare('INSERT OR IGNORE INTO approvals (id, digest, created_at, owner) VALUES (?, ?, ?, ?)');
    this.useApproval = this.database.prepare('UPDATE approvals SET used_at = ? WHERE id = ? AND digest = ? AND owner = ? AND used_at IS NULL');
    this.selectApproval = this.database.prepare('SELECT digest, used_at FROM approvals WHERE id = ? AND owner = ?');
    this.insertRun = this.database.prepare('INSERT OR REPLACE INTO background_runs (id, owner, heartbeat_at, state, queued_at, request) VALUES (?, ?, ?, ?, ?, ?)');
    this.touchRun = this.database.prepare('UPDATE background_runs SET heartbeat_at = ? WHERE id = ? AND owner = ? RETURNING cancel_requested');
    this.cancelRun = this.database.prepare('UPDATE background_runs SET cancel_requested = 1 WHERE id = ?');
    this.selectStale = this.database.prepare("SELECT id FROM background_runs WHERE heartbeat_at < ? AND state = 'running' ORDER BY heartbeat_at, id");
    this.deleteRun = this.database.prepare('DELETE FROM background_runs WHERE id = ?');
    this.claimStale = this.database.prepare("DELETE FROM background_runs WHERE id = ? AND heartbeat_at < ? AND state = 'running' AND (? IS NULL OR owner = ?)");
    this.ownsRun = this.database.prepare('SELECT 1 FROM background_runs WHERE id = ? AND owner = ?');
    this.selectQueued = this.database.prepare("SELECT id, request FROM background_runs WHERE state = 'queued' AND (owner = ? OR heartbeat_at < ?) ORDER BY queued_at, id LIMIT 1");
    this.startQueued = this.database.prepare("UPDATE background_runs SET state = 'running', owner = ?, heartbeat_at = ?, request = NULL WHERE id = ?");
    this.lastSequence = this.database.prepare('SELECT MAX(sequence) FROM response_events WHERE response_id = ?').pluck();
    this.conversationWriter = new SqliteConversationWriter(this.database);
    this.insertEvent = this.database.prepare('INSERT OR IGNORE INTO response_events (response_id, sequence, event) VALUES (?, ?, ?)');
    this.selectEvents = this.database.prepare('SELECT sequence, event FROM response_events WHERE response_id = ? AND sequence > ? ORDER BY sequence');
    this.deleteEvents = this.database.prepare('DELETE FROM response_events WHERE response_id = ?');
    this.upsert = this.database.prepare(
      `INSERT INTO responses (id, previous_response_id, status, created_at, response, input_items, owner)
       VALUES (@id, @previous, @status, @createdAt, @response, @inputItems, @owner)
       ON CONFLICT(id) DO UPDATE SET status = excluded.status, response = excluded.response, input_items = excluded.input_items`,
    );
    this.selectOne = this.database.prepare('SELECT response, input_items, owner FROM responses WHERE id = ?');
    // Walk previous_response_id links in one statement; depth is bounded to stop cycles.
    this.selectChain = this.database.prepare(`
      WITH RECURSIVE chain(id, depth) AS (
        SELECT id, 0 FROM responses WHERE id = ?
        UNION ALL
        SELECT r.previous_response_id, chain.depth + 1 FROM responses r JOIN chain ON r.id = chain.id
        WHERE r.previous_response_id IS NOT NULL AND chain.depth < 10000
      )
      SELECT r.response, r.input_items, r.owner,
        (SELECT json_group_array(json(g.record)) FROM gateway_call_records g WHERE g.response_id = r.id) AS call_records
      FROM chain JOIN responses r ON r.id = chain.id ORDER BY chain.depth DESC`);
    this.deleteOne = this.database.prepare('DELETE FROM responses WHERE id = ?');
    this.upsertCallRecord = this.database.prepare(`INSERT INTO gateway_call_records (item_id, response_id, record, owner) VALUES (?, ?, ?, ?)
       ON CONFLICT (item_id) DO UPDATE SET response_id = excluded.response_id, record = excluded.record WHERE gateway_call_records.owner = excluded.owner`);
    this.deleteCallRecords = this.database.prepare('DELETE FROM gateway_call_records WHERE response_id = ?');
    this.selectExpired = this.database
      .prepare("SELECT id FROM responses WHERE created_at < ? AND status IN ('completed', 'incomplete', 'failed', 'cancelled') ORDER BY created_at LIMIT ?")
      .pluck();
    this.pruneApprovals = this.database.prepare('DELETE FROM approvals WHERE id IN (SELECT id FROM approvals WHERE created_at < ? ORDER BY created_at LIMIT ?)');
  }

  async save(record: StoredResponse): Promise<void> {
    this.written(this.writeRecord(record));
  }

  /** Writes a response; returns the row, for the chain cache once it is committed. */
  private writeRecord(record: StoredResponse): ResponseRow {
    const row = responseRow(record);
    this.upsert.run(row);
    return row;
  }

  private written(row: ResponseRow, callRecords?: readonly GatewayCallRecord[]): void {
    this.chains.written(row, callRecords);
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const row = this.selectOne.get(id) as { response: string; input_items: string } | undefined;
    return row ? decode(row) : undefined;
  }

  async chain(id: string): Promise<readonly StoredResponse[] | undefined> {
    const epoch = this.selectDeletions.get() as number;
    const held = this.chains.get(id, epoch);
    if (held) return held;
    const rows = this.selectChain.all(id) as Array<{ response: string; input_items: string; call_records: string }>;
    if (rows.length === 0) return undefined;
    // each response with the model-facing records of its gateway calls, as the chain cache holds it
    const chain = rows.map((row) => withCallRecords(decode(row), JSON.parse(row.call_records)));
    this.chains.fill(chain, rows.reduce((sum, row) => sum + row.response.length + row.input_items.length + row.call_records.length, 0), epoch);
    return chain;
  }

  async delete(id: string): Promise<boolean> {
    return this.deleteTx(id);
  }

  /** The response with its event log and call records, in one transaction: never a log without its response. */
  private readonly deleteTx = (id: string): boolean =>
    this.database
      .transaction(() => {
        this.deleteEvents.run(id);
        this.deleteCallRecords.run(id);
        const deleted = this.deleteOne.run(id).changes > 0;
        if (deleted) this.bumpDeletions.run();
        return deleted;
      })
      .immediate();

  async pruneResponses(beforeSeconds: number, limit: number): Promise<number> {
    return this.database
      .transaction(() => {
        const ids = this.selectExpired.all(beforeSeconds, limit) as string[];
        for (const id of ids) {
          this.deleteEvents.run(id);
          this.deleteCallRecords.run(id);
          this.deleteOne.run(id);
        }
        if (ids.length > 0) this.bumpDeletions.run();
        // approvals are issued by responses: past the same age, their response is gone too
        this.pruneApprovals.run(beforeSeconds * 1000, limit);
        return ids.length;
      })
      .immediate();
  }

  async listInputItems(id: string, options: ListOptions): Promise<ItemPage | undefined> {
    const record = await this.get(id);
    return record ? pageItems(record.inputItems, options) : undefined;
  }

  async findItem(id: string, owner = DEFAULT_TENANT): Promise<Item | undefined> {
    // a text match narrows the rows (ids are unique random strings); the documents say for sure
    const rows = this.database.prepare('SELECT response, input_items FROM responses WHERE owner = ? AND (instr(response, ?) > 0 OR instr(input_items, ?) > 0) ORDER BY created_at DESC LIMIT 20').all(owner, `"${id}"`, `"${id}"`) as Array<{ response: string; input_items: string }>;
    for (const row of rows) {
      const found = itemIn(decode(row), id);
      if (found) return found;
    }
    return undefined;
  }

  async saveCallRecords(responseId: string, records: readonly GatewayCallRecord[], owner = DEFAULT_TENANT): Promise<void> {
    this.database.transaction(() => this.writeCallRecords(responseId, records, owner))();
  }

  private writeCallRecords(responseId: string, records: readonly GatewayCallRecord[], owner = DEFAULT_TENANT): void {
    for (const record of records) this.upsertCallRecord.run(record.itemId, responseId, JSON.stringify(record), owner);
  }

  async callRecords(itemIds: readonly string[], owner = DEFAULT_TENANT): Promise<GatewayCallRecord[]> {
    const out: GatewayCallRecord[] = [];
    // in slices: SQLite caps the number of bound parameters per statement
    for (let i = 0; i < itemIds.length; i += 500) {
      const slice = itemIds.slice(i, i + 500);
      const rows = this.database.prepare(`SELECT record FROM gateway_call_records WHERE owner = ? AND item_id IN (${slice.map(() => '?').join(',')})`).all(owner, ...slice) as Array<{ record: string }>;
      for (const row of rows) out.push(JSON.parse(row.record));
    }
    return out;
  }

  async recordApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<void> {
    this.insertApproval.run(id, digest, Date.now(), owner);
  }

  async checkApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<'ok' | 'unknown' | 'used' | 'mismatch'> {
    const row = this.selectApproval.get(id, owner) as { digest: string; used_at: number | null } | undefined;
    if (!row) return 'unknown';
    if (row.digest !== digest) return 'mismatch';
    return row.used_at === null ? 'ok' : 'used';
  }

  async consumeApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<'ok' | 'unknown' | 'used' | 'mismatch'> {
    if (this.useApproval.run(Date.now(), id, digest, owner).changes === 1) return 'ok';
    const row = this.selectApproval.get(id, owner) as { digest: string; used_at: number | null } | undefined;
    if (!row) return 'unknown';
    return row.digest !== digest ? 'mismatch' : 'used';
  }

  async registerRun(id: string, owner: string, queued?: { request: string }): Promise<void> {
    const now = Date.now();
    await this.batches.run(() => this.insertRun.run(id, owner, now, queued ? 'queued' : 'running', queued ? now : null, queued?.request ?? null));
  }

  async startRun(record: StoredResponse, owner: string): Promise<void> {
    const now = Date.now();
    const written = await this.batches.run(() => {
      this.insertRun.run(record.response.id, owner, now, 'running', null, null);
      return this.writeRecord(record);
    });
    this.written(written);
  }

  async heartbeat(owner: string, ids: readonly string[]): Promise<RunHeartbeat> {
    const now = Date.now();
    const result: RunHeartbeat = { cancelled: [], lost: [] };
    for (const id of ids) {
      const row = this.touchRun.get(now, id, owner) as { cancel_requested: number } | undefined;
      if (!row) result.lost.push(id);
      else if (row.cancel_requested) result.cancelled.push(id);
    }
    return result;
  }

  async requestCancel(id: string): Promise<void> {
    this.cancelRun.run(id);
  }

  async staleRuns(before: number): Promise<string[]> {
    return (this.selectStale.all(before) as Array<{ id: string }>).map((r) => r.id);
  }

  async failStaleRun(id: string, before: number, fail: StaleRunSettler, owner?: string): Promise<boolean> {
    return this.failStaleTx(id, before, fail, owner ?? null);
  }

  // IMMEDIATE (write lock first): another process's owner cannot write between the claim and the settlement
  private readonly failStaleTx = (id: string, before: number, fail: StaleRunSettler, owner: string | null): boolean => {
    let written: ResponseRow | undefined;
    const claimed = this.database
      .transaction(() => {
        if (this.claimStale.run(id, before, owner, owner).changes !== 1) return false;
        const row = this.selectOne.get(id) as { response: string; input_items: string } | undefined;
        const last = this.lastSequence.get(id) as number | null;
        const settled = fail(row ? decode(row) : undefined, last === null ? 0 : last + 1);
        if (settled) {
          written = this.writeRecord(settled.record);
          if (settled.event) this.insertEvent.run(id, settled.event.sequence, settled.event.json);
        }
        return true;
      })
      .immediate();
    if (written) this.written(written);
    return claimed;
  };

  async claimQueuedRun(owner: string, staleBefore: number): Promise<{ id: string; request: string | null } | undefined> {
    return this.database
      .transaction(() => {
        const row = this.selectQueued.get(owner, staleBefore) as { id: string; request: string | null } | undefined;
        if (!row) return undefined;
        this.startQueued.run(owner, Date.now(), row.id);
        return { id: row.id, request: row.request };
      })
      .immediate();
  }

  async finishRun(id: string): Promise<void> {
    this.deleteRun.run(id);
  }

  async saveOwned(record: StoredResponse, owner: string): Promise<boolean> {
    const written = await this.batches.run(() => (this.ownsRun.get(record.response.id, owner) ? this.writeRecord(record) : undefined));
    if (written) this.written(written);
    return written !== undefined;
  }

  async settle(settlement: Settlement): Promise<SettleOutcome> {
    let written: ResponseRow | undefined;
    const settleNow = (): SettleOutcome => {
      const id = settlement.record?.response.id;
      if (settlement.owner !== undefined && (id === undefined || !this.ownsRun.get(id, settlement.owner))) return 'not_owner';
      const conversation = settlement.conversation;
      if (conversation) {
        if (conversation.lease !== undefined && !this.conversationWriter.releaseLease(conversation.id, conversation.lease)) throw new Abandon('lease_lost');
        if (!this.conversationWriter.append(conversation.id, conversation.items)) throw new Abandon('conversation_not_found');
      }
      if (settlement.callRecords) this.writeCallRecords(settlement.callRecords.responseId, settlement.callRecords.records, settlement.callRecords.owner);
      if (id !== undefined) {
        for (const e of settlement.events ?? []) this.insertEvent.run(id, e.sequence, e.json);
        written = this.writeRecord(settlement.record!);
        if (settlement.owner !== undefined) this.deleteRun.run(id);
      }
      return 'ok';
    };
    try {
      // group-committed with the other writes of this loop turn (sqlite-batches.ts)
      const outcome = await this.batches.run(settleNow);
      if (outcome === 'ok' && written) this.written(written, settlement.callRecords?.records);
      return outcome;
    } catch (err) {
      // thrown to roll back what the transaction had written so far
      if (err instanceof Abandon) return err.outcome;
      throw err;
    }
  }

  async appendEvents(responseId: string, events: readonly StreamEvent[], owner?: string): Promise<boolean> {
    if (events.length === 0) return true;
    return this.appendMany(responseId, events, owner);
  }

  private readonly appendMany = (responseId: string, events: readonly StreamEvent[], owner: string | undefined): boolean =>
    this.database
      .transaction(() => {
        if (owner !== undefined && !this.ownsRun.get(responseId, owner)) return false;
        for (const e of events) this.insertEvent.run(responseId, e.sequence, e.json);
        return true;
      })
      .immediate();

  async eventsAfter(responseId: string, after: number): Promise<Array<{ sequence: number; json: string }>> {
    return (this.selectEvents.all(responseId, after) as Array<{ sequence: number; event: string }>).map((r) => ({ sequence: r.sequence, json: r.event }));
  }

  async close(): Promise<void> {
    this.batches.flush();
    this.database.close();
  }
}

function decode(row: { response: string; input_items: string; owner?: string }): StoredResponse {
  return { response: JSON.parse(row.response), inputItems: JSON.parse(row.input_items), ...(row.owner !== undefined ? { owner: row.owner } : {}) };
}
