import type Database from 'better-sqlite3';
import { openDatabase } from './sqlite-file.js';
import type { Item } from '../protocol/responses.js';
import { itemIn, pageItems, type GatewayCallRecord, type ItemPage, type ListOptions, type ResponseStore, type StoredResponse } from './store.js';

/**
 * The embedded store: one SQLite file (WAL) in the data folder. better-sqlite3 is synchronous;
 * each call is a single indexed statement, far below a millisecond.
 */
export class SqliteResponseStore implements ResponseStore {
  private readonly db: Database.Database;
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
  private readonly claimRun: Database.Statement;
  private readonly insertEvent: Database.Statement;
  private readonly selectEvents: Database.Statement;
  private readonly deleteEvents: Database.Statement;
  private readonly upsertCallRecord: Database.Statement;
  private readonly deleteCallRecords: Database.Statement;

  constructor(dataDir: string | ':memory:') {
    this.db = openDatabase(dataDir);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS responses (
        id TEXT PRIMARY KEY,
        previous_response_id TEXT,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        response TEXT NOT NULL,
        input_items TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS background_runs (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        cancel_requested INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE IF NOT EXISTS response_events (
        response_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (response_id, sequence)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS gateway_call_records (
        item_id TEXT PRIMARY KEY,
        response_id TEXT NOT NULL,
        record TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS gateway_call_records_by_response ON gateway_call_records (response_id);
      CREATE TABLE IF NOT EXISTS approvals (
        id TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        used_at INTEGER
      );
    `);
    this.insertApproval = this.db.prepare('INSERT OR IGNORE INTO approvals (id, digest, created_at) VALUES (?, ?, ?)');
    this.useApproval = this.db.prepare('UPDATE approvals SET used_at = ? WHERE id = ? AND digest = ? AND used_at IS NULL');
    this.selectApproval = this.db.prepare('SELECT digest, used_at FROM approvals WHERE id = ?');
    this.insertRun = this.db.prepare('INSERT OR REPLACE INTO background_runs (id, owner, heartbeat_at) VALUES (?, ?, ?)');
    this.touchRun = this.db.prepare('UPDATE background_runs SET heartbeat_at = ? WHERE id = ? AND owner = ? RETURNING cancel_requested');
    this.cancelRun = this.db.prepare('UPDATE background_runs SET cancel_requested = 1 WHERE id = ?');
    this.selectStale = this.db.prepare('SELECT id FROM background_runs WHERE heartbeat_at < ?');
    this.deleteRun = this.db.prepare('DELETE FROM background_runs WHERE id = ?');
    this.claimRun = this.db.prepare('DELETE FROM background_runs WHERE id = ? AND heartbeat_at < ?');
    this.insertEvent = this.db.prepare('INSERT OR IGNORE INTO response_events (response_id, sequence, event) VALUES (?, ?, ?)');
    this.selectEvents = this.db.prepare('SELECT sequence, event FROM response_events WHERE response_id = ? AND sequence > ? ORDER BY sequence');
    this.deleteEvents = this.db.prepare('DELETE FROM response_events WHERE response_id = ?');
    this.upsert = this.db.prepare(
      `INSERT INTO responses (id, previous_response_id, status, created_at, response, input_items)
       VALUES (@id, @previous, @status, @createdAt, @response, @inputItems)
       ON CONFLICT(id) DO UPDATE SET status = excluded.status, response = excluded.response, input_items = excluded.input_items`,
    );
    this.selectOne = this.db.prepare('SELECT response, input_items FROM responses WHERE id = ?');
    // Walk previous_response_id links in one statement; depth is bounded to stop cycles.
    this.selectChain = this.db.prepare(`
      WITH RECURSIVE chain(id, depth) AS (
        SELECT id, 0 FROM responses WHERE id = ?
        UNION ALL
        SELECT r.previous_response_id, chain.depth + 1 FROM responses r JOIN chain ON r.id = chain.id
        WHERE r.previous_response_id IS NOT NULL AND chain.depth < 10000
      )
      SELECT r.response, r.input_items FROM chain JOIN responses r ON r.id = chain.id ORDER BY chain.depth DESC`);
    this.deleteOne = this.db.prepare('DELETE FROM responses WHERE id = ?');
    this.upsertCallRecord = this.db.prepare('INSERT OR REPLACE INTO gateway_call_records (item_id, response_id, record) VALUES (?, ?, ?)');
    this.deleteCallRecords = this.db.prepare('DELETE FROM gateway_call_records WHERE response_id = ?');
  }

  async save(record: StoredResponse): Promise<void> {
    const r = record.response;
    this.upsert.run({
      id: r.id,
      previous: r.previous_response_id,
      status: r.status,
      createdAt: r.created_at,
      response: JSON.stringify(r),
      inputItems: JSON.stringify(record.inputItems),
    });
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const row = this.selectOne.get(id) as { response: string; input_items: string } | undefined;
    return row ? decode(row) : undefined;
  }

  async chain(id: string): Promise<StoredResponse[] | undefined> {
    const rows = this.selectChain.all(id) as Array<{ response: string; input_items: string }>;
    return rows.length === 0 ? undefined : rows.map(decode);
  }

  async delete(id: string): Promise<boolean> {
    this.deleteEvents.run(id);
    this.deleteCallRecords.run(id);
    return this.deleteOne.run(id).changes > 0;
  }

  async listInputItems(id: string, options: ListOptions): Promise<ItemPage | undefined> {
    const record = await this.get(id);
    return record ? pageItems(record.inputItems, options) : undefined;
  }

  async findItem(id: string): Promise<Item | undefined> {
    // a text match narrows the rows (ids are unique random strings); the documents say for sure
    const rows = this.db.prepare('SELECT response, input_items FROM responses WHERE instr(response, ?) > 0 OR instr(input_items, ?) > 0 ORDER BY created_at DESC LIMIT 20').all(`"${id}"`, `"${id}"`) as Array<{ response: string; input_items: string }>;
    for (const row of rows) {
      const found = itemIn(decode(row), id);
      if (found) return found;
    }
    return undefined;
  }

  async saveCallRecords(responseId: string, records: readonly GatewayCallRecord[]): Promise<void> {
    this.db.transaction(() => {
      for (const record of records) this.upsertCallRecord.run(record.itemId, responseId, JSON.stringify(record));
    })();
  }

  async callRecords(itemIds: readonly string[]): Promise<GatewayCallRecord[]> {
    const out: GatewayCallRecord[] = [];
    // in slices: SQLite caps the number of bound parameters per statement
    for (let i = 0; i < itemIds.length; i += 500) {
      const slice = itemIds.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT record FROM gateway_call_records WHERE item_id IN (${slice.map(() => '?').join(',')})`).all(...slice) as Array<{ record: string }>;
      for (const row of rows) out.push(JSON.parse(row.record));
    }
    return out;
  }

  async recordApproval(id: string, digest: string): Promise<void> {
    this.insertApproval.run(id, digest, Date.now());
  }

  async checkApproval(id: string, digest: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'> {
    const row = this.selectApproval.get(id) as { digest: string; used_at: number | null } | undefined;
    if (!row) return 'unknown';
    if (row.digest !== digest) return 'mismatch';
    return row.used_at === null ? 'ok' : 'used';
  }

  async consumeApproval(id: string, digest: string): Promise<'ok' | 'unknown' | 'used' | 'mismatch'> {
    if (this.useApproval.run(Date.now(), id, digest).changes === 1) return 'ok';
    const row = this.selectApproval.get(id) as { digest: string; used_at: number | null } | undefined;
    if (!row) return 'unknown';
    return row.digest !== digest ? 'mismatch' : 'used';
  }

  async registerRun(id: string, owner: string): Promise<void> {
    this.insertRun.run(id, owner, Date.now());
  }

  async heartbeat(owner: string, ids: readonly string[]): Promise<string[]> {
    const now = Date.now();
    const cancelled: string[] = [];
    for (const id of ids) {
      const row = this.touchRun.get(now, id, owner) as { cancel_requested: number } | undefined;
      if (row?.cancel_requested) cancelled.push(id);
    }
    return cancelled;
  }

  async requestCancel(id: string): Promise<void> {
    this.cancelRun.run(id);
  }

  async staleRuns(before: number): Promise<string[]> {
    return (this.selectStale.all(before) as Array<{ id: string }>).map((r) => r.id);
  }

  async claimStaleRun(id: string, before: number): Promise<boolean> {
    return this.claimRun.run(id, before).changes === 1;
  }

  async finishRun(id: string): Promise<void> {
    this.deleteRun.run(id);
  }

  async appendEvents(responseId: string, events: ReadonlyArray<{ sequence: number; json: string }>): Promise<void> {
    this.appendMany(responseId, events);
  }

  private readonly appendMany = (responseId: string, events: ReadonlyArray<{ sequence: number; json: string }>) =>
    this.db.transaction(() => {
      for (const e of events) this.insertEvent.run(responseId, e.sequence, e.json);
    })();

  async eventsAfter(responseId: string, after: number): Promise<Array<{ sequence: number; json: string }>> {
    return (this.selectEvents.all(responseId, after) as Array<{ sequence: number; event: string }>).map((r) => ({ sequence: r.sequence, json: r.event }));
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

function decode(row: { response: string; input_items: string }): StoredResponse {
  return { response: JSON.parse(row.response), inputItems: JSON.parse(row.input_items) };
}
