import pg from 'pg';
import type { Item } from '../protocol/responses.js';
import { ChainCache, DEFAULT_CHAIN_CACHE_BYTES, responseRow, withCallRecords, type ResponseRow } from './chain-cache.js';
import { DEFAULT_TENANT } from './tenant.js';
import { PostgresApprovals, type Verdict } from './postgres-approvals.js';
import { PostgresRuns } from './postgres-runs.js';
import { appendConversationItems } from './postgres-conversation-items.js';
import { openMigratedPool, migrate, withTransaction, type PostgresStoreOptions } from './postgres-pool.js';
import { quoteIdent } from './postgres-sql.js';

export { quoteIdent };
export { createPool, migrate, migrateUnderLock, openMigratedPool, withTransaction, type PostgresStoreOptions } from './postgres-pool.js';
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

interface DocumentRow {
  response: StoredResponse['response'];
  input_items: StoredResponse['inputItems'];
  owner?: string;
}

/**
 * The shared store for several gateway replicas: the same tables and semantics as the SQLite
 * store, every operation one statement (single-use approvals, heartbeats and event appends are
 * atomic across replicas).
 */
export class PostgresResponseStore implements ResponseStore {
  private readonly t: {
    responses: string;
    runs: string;
    events: string;
    approvals: string;
    locks: string;
    callRecords: string;
    epochs: string;
  };
  private readonly runs: PostgresRuns;
  /** A response's upsert, its row (VALUES or a SELECT) in between: written whole, its identity kept. */
  private readonly upsertResponse: { head: string; tail: string };
  private readonly approvals: PostgresApprovals;
  /** Settled chains already read or written here; a deletion on any replica invalidates them (the epoch). */
  private readonly chains: ChainCache;

  private constructor(
    /** The pool, to share with a `PostgresConversationStore.fromPool`. */
    readonly pool: pg.Pool,
    readonly schema: string,
    private readonly ownsPool: boolean,
    chainCacheBytes = DEFAULT_CHAIN_CACHE_BYTES,
  ) {
    this.chains = new ChainCache(chainCacheBytes);
    const s = quoteIdent(schema);
    this.t = { responses: `${s}.responses`, runs: `${s}.background_runs`, events: `${s}.response_events`, approvals: `${s}.approvals`, locks: `${s}.conversation_locks`, callRecords: `${s}.gateway_call_records`, epochs: `${s}.store_epochs` };
    this.runs = new PostgresRuns(pool, this.t.runs);
    this.upsertResponse = { head: `INSERT INTO ${this.t.responses} (id, previous_response_id, status, created_at, response, input_items, owner)`, tail: 'ON CONFLICT (id) DO UPDATE SET status = excluded.status, response = excluded.response, input_items = excluded.input_items' };
    this.approvals = new PostgresApprovals(pool, this.t.approvals);
  }

  /** Connects (a pool of its own, ended by `close`) and creates the tables when missing. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresResponseStore> {
    const { pool, schema } = await openMigratedPool(url, options);
    return new PostgresResponseStore(pool, schema, true, options.chainCacheBytes);
  }

  /** On a pool owned by the caller (`close` leaves it open); creates the tables when missing. */
  static async fromPool(pool: pg.Pool, schema = 'public'): Promise<PostgresResponseStore> {
    await migrate(pool, schema);
    return new PostgresResponseStore(pool, schema, false);
  }

  async save(record: StoredResponse): Promise<void> {
    this.chains.written(await this.write(this.pool, record));
  }

  /** Writes a response; returns the row, for the chain cache once it is committed. */
  private async write(client: pg.Pool | pg.PoolClient, record: StoredResponse): Promise<ResponseRow> {
    const row = responseRow(record);
    await client.query(
      `${this.upsertResponse.head}
       VALUES ($1, $2, $3, $4, $5::json, $6::json, $7)
       ${this.upsertResponse.tail}`,
      [row.id, row.previous, row.status, row.createdAt, row.response, row.inputItems, row.owner],
    );
    return row;
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const { rows } = await this.pool.query<DocumentRow>(`SELECT response, input_items, owner FROM ${this.t.responses} WHERE id = $1`, [id]);
    return rows.length > 0 ? decode(rows[0]) : undefined;
  }

  async chain(id: string): Promise<readonly StoredResponse[] | undefined> {
    const { rows: epochs } = await this.pool.query<{ value: string }>(`SELECT value FROM ${this.t.epochs} WHERE name = 'deletions'`);
    const epoch = Number(epochs[0]?.value ?? 0);
    const held = this.chains.get(id, epoch);
    if (held) return held;
    // Walk previous_response_id links in one statement; depth is bounded to stop cycles.
    const { rows } = await this.pool.query<DocumentRow & { call_records: GatewayCallRecord[] | null; bytes: number }>(
      `WITH RECURSIVE chain(id, depth) AS (
         SELECT id, 0 FROM ${this.t.responses} WHERE id = $1
         UNION ALL
         SELECT r.previous_response_id, chain.depth + 1 FROM ${this.t.responses} r JOIN chain ON r.id = chain.id
         WHERE r.previous_response_id IS NOT NULL AND chain.depth < 10000
       )
       SELECT r.response, r.input_items, r.owner, records.list AS call_records,
         length(r.response::text) + length(r.input_items::text) + coalesce(length(records.list::text), 0) AS bytes
       FROM chain JOIN ${this.t.responses} r ON r.id = chain.id
       LEFT JOIN LATERAL (SELECT json_agg(g.record) AS list FROM ${this.t.callRecords} g WHERE g.response_id = r.id) records ON true
       ORDER BY chain.depth DESC`,
      [id],
    );
    if (rows.length === 0) return undefined;
    // each response with the model-facing records of its gateway calls, as the chain cache holds it
    const chain = rows.map((row) => withCallRecords(decode(row), row.call_records ?? []));
    this.chains.fill(chain, rows.reduce((sum, row) => sum + Number(row.bytes), 0), epoch);
    return chain;
  }

  async findItem(id: string, owner = DEFAULT_TENANT): Promise<Item | undefined> {
    // a text match narrows the rows (ids are unique random strings); the documents say for sure.
    // No json operators: they reject documents holding \u0000, which `json` columns may keep.
    const needle = `"${id}"`;
    const { rows } = await this.pool.query<DocumentRow>(
      `SELECT response, input_items FROM ${this.t.responses} WHERE owner = $2 AND (strpos(response::text, $1) > 0 OR strpos(input_items::text, $1) > 0) ORDER BY created_at DESC LIMIT 20`,
      [needle, owner],
    );
    for (const row of rows) {
      const found = itemIn(decode(row), id);
      if (found) return found;
    }
    return undefined;
  }

  async saveCallRecords(responseId: string, records: readonly GatewayCallRecord[], owner = DEFAULT_TENANT): Promise<void> {
    await this.writeCallRecords(this.pool, responseId, records, owner);
  }

  private async writeCallRecords(client: pg.Pool | pg.PoolClient, responseId: string, records: readonly GatewayCallRecord[], owner = DEFAULT_TENANT): Promise<void> {
    if (records.length === 0) return;
    await client.query(
      `INSERT INTO ${this.t.callRecords} (item_id, response_id, record, owner)
       SELECT item_id, $1, record::json, $4 FROM unnest($2::text[], $3::text[]) AS r(item_id, record)
       ON CONFLICT (item_id) DO UPDATE SET response_id = excluded.response_id, record = excluded.record
       WHERE ${this.t.callRecords}.owner = excluded.owner`,
      // one document per record, never taken apart in SQL (json operators reject \u0000)
      [responseId, records.map((r) => r.itemId), records.map((r) => JSON.stringify(r)), owner],
    );
  }

  async callRecords(itemIds: readonly string[], owner = DEFAULT_TENANT): Promise<GatewayCallRecord[]> {
    if (itemIds.length === 0) return [];
    const { rows } = await this.pool.query<{ record: GatewayCallRecord }>(`SELECT record FROM ${this.t.callRecords} WHERE item_id = ANY($1::text[]) AND owner = $2`, [itemIds, owner]);
    return rows.map((row) => row.record);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.pool.query(
      `WITH events AS (DELETE FROM ${this.t.events} WHERE response_id = $1),
            records AS (DELETE FROM ${this.t.callRecords} WHERE response_id = $1),
            epoch AS (UPDATE ${this.t.epochs} SET value = value + 1 WHERE name = 'deletions' AND EXISTS (SELECT 1 FROM ${this.t.responses} WHERE id = $1))
       DELETE FROM ${this.t.responses} WHERE id = $1`,
      [id],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async pruneResponses(beforeSeconds: number, limit: number): Promise<number> {
    // one statement, so atomic; SKIP LOCKED: replicas sweeping at once take different rows
    const result = await this.pool.query(
      `WITH doomed AS (
         SELECT id FROM ${this.t.responses} WHERE created_at < $1 AND status IN ('completed', 'incomplete', 'failed', 'cancelled')
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ),
       events AS (DELETE FROM ${this.t.events} WHERE response_id IN (SELECT id FROM doomed)),
       records AS (DELETE FROM ${this.t.callRecords} WHERE response_id IN (SELECT id FROM doomed)),
       approvals AS (DELETE FROM ${this.t.approvals} WHERE id IN (SELECT id FROM ${this.t.approvals} WHERE created_at < $1 * 1000 ORDER BY created_at LIMIT $2)),
       epoch AS (UPDATE ${this.t.epochs} SET value = value + 1 WHERE name = 'deletions' AND EXISTS (SELECT 1 FROM doomed))
       DELETE FROM ${this.t.responses} WHERE id IN (SELECT id FROM doomed)`,
      [beforeSeconds, limit],
    );
    return result.rowCount ?? 0;
  }

  async listInputItems(id: string, options: ListOptions): Promise<ItemPage | undefined> {
    const { rows } = await this.pool.query<Pick<DocumentRow, 'input_items'>>(`SELECT input_items FROM ${this.t.responses} WHERE id = $1`, [id]);
    return rows.length > 0 ? pageItems(rows[0].input_items, options) : undefined;
  }

  recordApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<void> {
    return this.approvals.record(id, digest, owner);
  }

  checkApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<Verdict> {
    return this.approvals.check(id, digest, owner);
  }

  consumeApproval(id: string, digest: string, owner = DEFAULT_TENANT): Promise<Verdict> {
    return this.approvals.consume(id, digest, owner);
  }

  registerRun(id: string, owner: string, queued?: { request: string }): Promise<void> {
    return this.runs.register(id, owner, queued);
  }

  async startRun(record: StoredResponse, owner: string): Promise<void> {
    const row = responseRow(record);
    // one statement, so one implicit transaction: the run and its response are written together or not at all
    await this.pool.query(
      `WITH run AS (${this.runs.upsert.head} VALUES ($1, $7, $8, 'running', NULL, NULL) ${this.runs.upsert.tail})
       ${this.upsertResponse.head}
       VALUES ($1, $2, $3, $4, $5::json, $6::json, $9)
       ${this.upsertResponse.tail}`,
      [row.id, row.previous, row.status, row.createdAt, row.response, row.inputItems, owner, Date.now(), row.owner],
    );
    this.chains.written(row);
  }

  heartbeat(owner: string, ids: readonly string[]): Promise<RunHeartbeat> {
    return this.runs.heartbeat(owner, ids);
  }

  requestCancel(id: string): Promise<void> {
    return this.runs.requestCancel(id);
  }

  staleRuns(before: number): Promise<string[]> {
    return this.runs.stale(before);
  }

  async failStaleRun(id: string, before: number, fail: StaleRunSettler, owner?: string): Promise<boolean> {
    let written: ResponseRow | undefined;
    const claimed = await withTransaction(this.pool, async (client) => {
      // the DELETE takes the run's row lock: an owner settling at the same moment waits, then finds no claim
      const claimed = await client.query(`DELETE FROM ${this.t.runs} WHERE id = $1 AND heartbeat_at < $2 AND state = 'running' AND ($3::text IS NULL OR owner = $3)`, [id, before, owner ?? null]);
      if ((claimed.rowCount ?? 0) !== 1) return false;
      const { rows } = await client.query<DocumentRow>(`SELECT response, input_items FROM ${this.t.responses} WHERE id = $1 FOR UPDATE`, [id]);
      const { rows: last } = await client.query<{ last: number | null }>(`SELECT MAX(sequence) AS last FROM ${this.t.events} WHERE response_id = $1`, [id]);
      const settled = fail(rows.length > 0 ? decode(rows[0]) : undefined, last[0].last === null ? 0 : last[0].last + 1);
      if (settled) {
        written = await this.write(client, settled.record);
        if (settled.event) await this.insertEvents(client, id, [settled.event]);
      }
      return true;
    });
    if (written) this.chains.written(written);
    return claimed;
  }

  claimQueuedRun(owner: string, staleBefore: number): Promise<{ id: string; request: string | null } | undefined> {
    return this.runs.claimQueued(owner, staleBefore);
  }

  finishRun(id: string): Promise<void> {
    return this.runs.finish(id);
  }

  async saveOwned(record: StoredResponse, owner: string): Promise<boolean> {
    // one statement: the run's row lock (a sweeper's claim waits, or has already removed the row)
    const row = responseRow(record);
    const result = await this.pool.query(
      `WITH owned AS (SELECT 1 FROM ${this.t.runs} WHERE id = $1 AND owner = $7 FOR UPDATE)
       ${this.upsertResponse.head}
       SELECT $1, $2, $3, $4, $5::json, $6::json, $8 FROM owned
       ${this.upsertResponse.tail}`,
      [row.id, row.previous, row.status, row.createdAt, row.response, row.inputItems, owner, row.owner],
    );
    const saved = (result.rowCount ?? 0) === 1;
    if (saved) this.chains.written(row);
    return saved;
  }

  async settle(settlement: Settlement): Promise<SettleOutcome> {
    const plainRun = settlement.conversation === undefined && !settlement.callRecords?.records.length;
    if (plainRun && settlement.record !== undefined && settlement.owner !== undefined) return this.settleRun(settlement.record, settlement.owner, settlement.events ?? []);
    let written: ResponseRow | undefined;
    try {
      const outcome = await withTransaction(this.pool, async (client): Promise<SettleOutcome> => {
        const id = settlement.record?.response.id;
        if (settlement.owner !== undefined && (id === undefined || !(await this.lockOwned(client, id, settlement.owner)))) return 'not_owner';
        const conversation = settlement.conversation;
        if (conversation) {
          if (conversation.lease !== undefined) {
            const released = await client.query(`DELETE FROM ${this.t.locks} WHERE conversation_id = $1 AND owner = $2`, [conversation.id, conversation.lease]);
            if ((released.rowCount ?? 0) !== 1) throw new Abandon('lease_lost');
          }
          if (!(await appendConversationItems(client, this.schema, conversation.id, conversation.items))) throw new Abandon('conversation_not_found');
        }
        if (settlement.callRecords) await this.writeCallRecords(client, settlement.callRecords.responseId, settlement.callRecords.records, settlement.callRecords.owner);
        if (id !== undefined) {
          await this.insertEvents(client, id, settlement.events ?? []);
          written = await this.write(client, settlement.record!);
          if (settlement.owner !== undefined) await client.query(`DELETE FROM ${this.t.runs} WHERE id = $1`, [id]);
        }
        return 'ok';
      });
      if (outcome === 'ok' && written) this.chains.written(written, settlement.callRecords?.records);
      return outcome;
    } catch (err) {
      // thrown to roll back what the transaction had written so far
      if (err instanceof Abandon) return err.outcome;
      throw err;
    }
  }

  async appendEvents(responseId: string, events: readonly StreamEvent[], owner?: string): Promise<boolean> {
    if (events.length === 0) return true;
    if (owner === undefined) {
      await this.insertEvents(this.pool, responseId, events);
      return true;
    }
    // one statement; a shared lock on the run's row: a sweeper's claim waits for it, or has removed the row
    const { rows } = await this.pool.query<{ owned: boolean }>(
      `WITH owned AS (SELECT 1 FROM ${this.t.runs} WHERE id = $1 AND owner = $4 FOR SHARE),
       logged AS (
         INSERT INTO ${this.t.events} (response_id, sequence, event)
         SELECT $1, e.sequence, e.event FROM owned, unnest($2::int[], $3::text[]) AS e(sequence, event)
         ON CONFLICT DO NOTHING
       )
       SELECT EXISTS (SELECT 1 FROM owned) AS owned`,
      [responseId, events.map((e) => e.sequence), events.map((e) => e.json), owner],
    );
    return rows[0].owned;
  }

  /**
   * A run's settlement without a conversation, in one statement: removing the claim takes the
   * run's row lock, and the events and the terminal state are written only if it was still held.
   */
  private async settleRun(record: StoredResponse, owner: string, events: readonly StreamEvent[]): Promise<SettleOutcome> {
    const row = responseRow(record);
    const { rows } = await this.pool.query<{ owned: boolean }>(
      `WITH claim AS (DELETE FROM ${this.t.runs} WHERE id = $1 AND owner = $7 RETURNING 1),
       logged AS (
         INSERT INTO ${this.t.events} (response_id, sequence, event)
         SELECT $1, e.sequence, e.event FROM claim, unnest($8::int[], $9::text[]) AS e(sequence, event)
         ON CONFLICT DO NOTHING
       ),
       saved AS (
         ${this.upsertResponse.head}
         SELECT $1, $2, $3, $4, $5::json, $6::json, $10 FROM claim
         ${this.upsertResponse.tail}
       )
       SELECT EXISTS (SELECT 1 FROM claim) AS owned`,
      [row.id, row.previous, row.status, row.createdAt, row.response, row.inputItems, owner, events.map((e) => e.sequence), events.map((e) => e.json), row.owner],
    );
    if (!rows[0].owned) return 'not_owner';
    this.chains.written(row);
    return 'ok';
  }

  /** Locks the run's row if `owner` still owns it (a sweeper's claim waits for this transaction). */
  private async lockOwned(client: pg.PoolClient, id: string, owner: string): Promise<boolean> {
    const { rows } = await client.query(`SELECT 1 FROM ${this.t.runs} WHERE id = $1 AND owner = $2 FOR UPDATE`, [id, owner]);
    return rows.length > 0;
  }

  private async insertEvents(client: pg.Pool | pg.PoolClient, responseId: string, events: readonly StreamEvent[]): Promise<void> {
    if (events.length === 0) return;
    await client.query(
      `INSERT INTO ${this.t.events} (response_id, sequence, event)
       SELECT $1, e.sequence, e.event FROM unnest($2::int[], $3::text[]) AS e(sequence, event)
       ON CONFLICT DO NOTHING`,
      [responseId, events.map((e) => e.sequence), events.map((e) => e.json)],
    );
  }

  async eventsAfter(responseId: string, after: number): Promise<Array<{ sequence: number; json: string }>> {
    const { rows } = await this.pool.query<{ sequence: number; event: string }>(
      `SELECT sequence, event FROM ${this.t.events} WHERE response_id = $1 AND sequence > $2 ORDER BY sequence`,
      [responseId, after],
    );
    return rows.map((row) => ({ sequence: row.sequence, json: row.event }));
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }
}

function decode(row: DocumentRow): StoredResponse {
  // node-postgres parses `json` columns already
  return { response: row.response, inputItems: row.input_items, ...(row.owner !== undefined ? { owner: row.owner } : {}) };
}
