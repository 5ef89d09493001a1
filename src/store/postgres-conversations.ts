import type pg from 'pg';
import { DEFAULT_TENANT } from './tenant.js';
import type { Item } from '../protocol/responses.js';
import { newId } from '../util/ids.js';
import { normalizeStoredItem } from '../util/items.js';
import type { Conversation, ConversationStore } from './conversations.js';
import { appendConversationItems } from './postgres-conversation-items.js';
import { openMigratedPool, migrate, quoteIdent, withTransaction, type PostgresStoreOptions } from './postgres.js';
import { pageFromRows, type ItemPage, type ListOptions } from './store.js';

interface ConversationRow {
  id: string;
  created_at: string | number;
  metadata: Record<string, string>;
}

/**
 * Conversations in PostgreSQL, beside the responses (same schema, same migration). Items are
 * rows ordered by `position`; an append locks the conversation row (`FOR UPDATE`), so appends
 * from several replicas queue up and each takes positions after the last committed one.
 */
export class PostgresConversationStore implements ConversationStore {
  private readonly conversationsTable: string;
  private readonly itemsTable: string;
  private readonly locksTable: string;

  private constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
    private readonly ownsPool: boolean,
  ) {
    const s = quoteIdent(schema);
    this.conversationsTable = `${s}.conversations`;
    this.itemsTable = `${s}.conversation_items`;
    this.locksTable = `${s}.conversation_locks`;
  }

  /** Connects (a pool of its own, ended by `close`) and creates the tables when missing. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresConversationStore> {
    const { pool, schema } = await openMigratedPool(url, options);
    return new PostgresConversationStore(pool, schema, true);
  }

  /**
   * On a pool owned by the caller, e.g. a `PostgresResponseStore`'s (`close` leaves it open);
   * creates the tables when missing.
   */
  static async fromPool(pool: pg.Pool, schema = 'public'): Promise<PostgresConversationStore> {
    await migrate(pool, schema);
    return new PostgresConversationStore(pool, schema, false);
  }

  async create(metadata: Record<string, string>, items: Item[], owner = DEFAULT_TENANT): Promise<Conversation> {
    const conversation: Conversation = { id: newId('conv'), object: 'conversation', created_at: Math.floor(Date.now() / 1000), metadata: { ...metadata } };
    const normalized = items.map((item) => normalizeStoredItem(item));
    await withTransaction(this.pool, async (client) => {
      await client.query(`INSERT INTO ${this.conversationsTable} (id, created_at, metadata, owner) VALUES ($1, $2, $3::json, $4)`, [
        conversation.id,
        conversation.created_at,
        JSON.stringify(conversation.metadata),
        owner,
      ]);
      await this.insertItems(client, conversation.id, normalized);
    });
    return conversation;
  }

  async get(id: string): Promise<Conversation | undefined> {
    const { rows } = await this.pool.query<ConversationRow>(`SELECT id, created_at, metadata FROM ${this.conversationsTable} WHERE id = $1`, [id]);
    return rows.length > 0 ? decodeConversation(rows[0]) : undefined;
  }

  async ownerOf(id: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ owner: string }>(`SELECT owner FROM ${this.conversationsTable} WHERE id = $1`, [id]);
    return rows[0]?.owner;
  }

  async update(id: string, metadata: Record<string, string>): Promise<Conversation | undefined> {
    const { rows } = await this.pool.query<ConversationRow>(
      `UPDATE ${this.conversationsTable} SET metadata = $2::json WHERE id = $1 RETURNING id, created_at, metadata`,
      [id, JSON.stringify(metadata)],
    );
    return rows.length > 0 ? decodeConversation(rows[0]) : undefined;
  }

  async delete(id: string): Promise<boolean> {
    // the items go with it (ON DELETE CASCADE), in the same statement
    const result = await this.pool.query(`DELETE FROM ${this.conversationsTable} WHERE id = $1`, [id]);
    return (result.rowCount ?? 0) > 0;
  }

  async items(id: string): Promise<Item[] | undefined> {
    // one statement, one snapshot: the conversation and its items
    const { rows } = await this.pool.query<{ item: Item | null }>(
      `SELECT i.item FROM ${this.conversationsTable} c LEFT JOIN ${this.itemsTable} i ON i.conversation_id = c.id
       WHERE c.id = $1 ORDER BY i.position`,
      [id],
    );
    if (rows.length === 0) return undefined;
    return rows.filter((row) => row.item !== null).map((row) => row.item as Item);
  }

  async appendItems(id: string, items: Item[]): Promise<boolean> {
    return withTransaction(this.pool, (client) => appendConversationItems(client, this.schema, id, items));
  }

  async listItems(id: string, options: ListOptions): Promise<ItemPage | undefined> {
    const asc = options.order === 'asc';
    // the `after` cursor: its first occurrence in the listing order (as pageItems finds it)
    const { rows: found } = await this.pool.query<{ at: number | null }>(
      `SELECT (SELECT ${asc ? 'MIN' : 'MAX'}(position) FROM ${this.itemsTable} WHERE conversation_id = c.id AND item_id = $2) AS at
       FROM ${this.conversationsTable} c WHERE c.id = $1`,
      [id, options.after ?? null],
    );
    if (found.length === 0) return undefined;
    let from = asc ? -1 : 2 ** 31 - 1;
    if (options.after !== undefined) {
      // an unknown cursor lies past the end (as pageItems treats it)
      if (found[0].at === null) return { data: [], firstId: null, lastId: null, hasMore: false };
      from = found[0].at;
    }
    // one row beyond the page tells whether there is more
    const { rows } = await this.pool.query<{ item: Item }>(
      `SELECT item FROM ${this.itemsTable} WHERE conversation_id = $1 AND position ${asc ? '>' : '<'} $2
       ORDER BY position ${asc ? 'ASC' : 'DESC'} LIMIT $3`,
      [id, from, options.limit + 1],
    );
    return pageFromRows(rows.map((row) => row.item), options.limit);
  }

  async getItem(id: string, itemId: string): Promise<Item | undefined> {
    // an id present more than once (a client may supply ids) resolves to its first occurrence
    const { rows } = await this.pool.query<{ item: Item }>(
      `SELECT item FROM ${this.itemsTable} WHERE conversation_id = $1 AND item_id = $2 ORDER BY position LIMIT 1`,
      [id, itemId],
    );
    return rows.length > 0 ? rows[0].item : undefined;
  }

  async acquireTurn(id: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    // one statement: insert, take over a lease that has expired — never one that is held — or renew one's own
    const result = await this.pool.query(
      `INSERT INTO ${this.locksTable} (conversation_id, owner, until_ms) VALUES ($1, $2, $3)
       ON CONFLICT (conversation_id) DO UPDATE SET owner = EXCLUDED.owner, until_ms = EXCLUDED.until_ms
       WHERE ${this.locksTable}.until_ms < $4 OR ${this.locksTable}.owner = EXCLUDED.owner`,
      [id, owner, now + ttlMs, now],
    );
    return (result.rowCount ?? 0) === 1;
  }

  async renewTurn(id: string, owner: string, ttlMs: number): Promise<boolean> {
    const result = await this.pool.query(`UPDATE ${this.locksTable} SET until_ms = $3 WHERE conversation_id = $1 AND owner = $2`, [id, owner, Date.now() + ttlMs]);
    return (result.rowCount ?? 0) === 1;
  }

  async releaseTurn(id: string, owner: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.locksTable} WHERE conversation_id = $1 AND owner = $2`, [id, owner]);
  }

  async deleteItem(id: string, itemId: string): Promise<boolean> {
    const result = await this.pool.query(`DELETE FROM ${this.itemsTable} WHERE conversation_id = $1 AND item_id = $2`, [id, itemId]);
    return (result.rowCount ?? 0) > 0;
  }

  async pruneItems(beforeSeconds: number, limit: number): Promise<number> {
    const result = await this.pool.query(
      `DELETE FROM ${this.itemsTable} WHERE (conversation_id, position) IN (
         SELECT conversation_id, position FROM ${this.itemsTable} WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
       )`,
      [beforeSeconds, limit],
    );
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  /** Inserts items after the conversation's last position, in one statement. */
  private async insertItems(client: pg.PoolClient, id: string, items: readonly Item[]): Promise<void> {
    if (items.length === 0) return;
    await client.query(
      `INSERT INTO ${this.itemsTable} (conversation_id, position, item_id, item)
       SELECT $1, next.base + i.ordinality - 1, i.item_id, i.item::json
       FROM (SELECT COALESCE(MAX(position), -1) + 1 AS base FROM ${this.itemsTable} WHERE conversation_id = $1) AS next,
            unnest($2::text[], $3::text[]) WITH ORDINALITY AS i(item_id, item, ordinality)`,
      [id, items.map((item) => item.id), items.map((item) => JSON.stringify(item))],
    );
  }
}

function decodeConversation(row: ConversationRow): Conversation {
  return { id: row.id, object: 'conversation', created_at: Number(row.created_at), metadata: row.metadata };
}
