import type Database from 'better-sqlite3';
import { DEFAULT_TENANT } from './tenant.js';
import { openDatabase } from './sqlite-file.js';
import { migrateSqlite } from './sqlite-schema.js';
import type { Item } from '../protocol/responses.js';
import { newId } from '../util/ids.js';
import { normalizeStoredItem } from '../util/items.js';
import type { Conversation, ConversationStore } from './conversations.js';
import { pageFromRows, type ItemPage, type ListOptions } from './store.js';

interface ConversationRow {
  id: string;
  created_at: number;
  metadata: string;
}

/**
 * Conversations in the same SQLite file as the responses (its own connection; WAL lets both
 * coexist). Items are rows ordered by `position`, so an append never rewrites the history and
 * a page is one indexed range scan.
 */
export class SqliteConversationStore implements ConversationStore {
  private readonly db: Database.Database;
  private readonly ownsDb: boolean;
  private readonly insertConversation: Database.Statement;
  private readonly selectConversation: Database.Statement;
  private readonly updateMetadata: Database.Statement;
  private readonly deleteConversation: Database.Statement;
  private readonly deleteAllItems: Database.Statement;
  private readonly selectItems: Database.Statement;
  private readonly selectNextPosition: Database.Statement;
  private readonly insertItem: Database.Statement;
  private readonly selectItem: Database.Statement;
  private readonly deleteItemRows: Database.Statement;
  private readonly selectFirstPosition: Database.Statement;
  private readonly selectLastPosition: Database.Statement;
  private readonly selectPageAsc: Database.Statement;
  private readonly selectPageDesc: Database.Statement;
  private readonly appendTx: (id: string, items: readonly Item[]) => boolean;
  private readonly createTx: (conversation: Conversation, items: readonly Item[], owner: string) => void;
  private readonly deleteTx: (id: string) => boolean;

  private readonly pruneItemRows: Database.Statement;
  private readonly selectOwner: Database.Statement;
  private readonly takeLock: Database.Statement;
  private readonly dropLock: Database.Statement;
  private readonly extendLock: Database.Statement;

  /**
   * On its own connection to the data folder's file, or on a connection it shares (a
   * `SqliteResponseStore`'s `database`, so a turn's settlement spans both in one transaction).
   */
  constructor(database: string | ':memory:' | Database.Database) {
    this.ownsDb = typeof database === 'string';
    this.db = typeof database === 'string' ? openDatabase(database) : database;
    migrateSqlite(this.db);
    // taken when free or expired; renewed when its holder takes it again
    this.takeLock = this.db.prepare(
      `INSERT INTO conversation_locks (conversation_id, owner, until_ms) VALUES (?, ?, ?)
       ON CONFLICT (conversation_id) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
       WHERE conversation_locks.until_ms < ? OR conversation_locks.owner = excluded.owner`,
    );
    this.dropLock = this.db.prepare('DELETE FROM conversation_locks WHERE conversation_id = ? AND owner = ?');
    this.extendLock = this.db.prepare('UPDATE conversation_locks SET until_ms = ? WHERE conversation_id = ? AND owner = ?');
    this.insertConversation = this.db.prepare('INSERT INTO conversations (id, created_at, metadata, owner) VALUES (?, ?, ?, ?)');
    this.selectOwner = this.db.prepare('SELECT owner FROM conversations WHERE id = ?').pluck();
    this.selectConversation = this.db.prepare('SELECT id, created_at, metadata FROM conversations WHERE id = ?');
    this.updateMetadata = this.db.prepare('UPDATE conversations SET metadata = ? WHERE id = ?');
    this.deleteConversation = this.db.prepare('DELETE FROM conversations WHERE id = ?');
    this.deleteAllItems = this.db.prepare('DELETE FROM conversation_items WHERE conversation_id = ?');
    this.selectItems = this.db.prepare('SELECT item FROM conversation_items WHERE conversation_id = ? ORDER BY position').pluck();
    this.selectNextPosition = this.db.prepare('SELECT COALESCE(MAX(position), -1) + 1 FROM conversation_items WHERE conversation_id = ?').pluck();
    this.insertItem = this.db.prepare('INSERT INTO conversation_items (conversation_id, position, item_id, item, created_at) VALUES (?, ?, ?, ?, ?)');
    this.pruneItemRows = this.db.prepare('DELETE FROM conversation_items WHERE rowid IN (SELECT rowid FROM conversation_items WHERE created_at < ? ORDER BY created_at LIMIT ?)');
    // an id present more than once (a client may supply ids) resolves to its first occurrence
    this.selectItem = this.db.prepare('SELECT item FROM conversation_items WHERE conversation_id = ? AND item_id = ? ORDER BY position LIMIT 1').pluck();
    this.deleteItemRows = this.db.prepare('DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?');
    // the `after` cursor: its first occurrence in the listing order (as pageItems finds it)
    this.selectFirstPosition = this.db.prepare('SELECT MIN(position) FROM conversation_items WHERE conversation_id = ? AND item_id = ?').pluck();
    this.selectLastPosition = this.db.prepare('SELECT MAX(position) FROM conversation_items WHERE conversation_id = ? AND item_id = ?').pluck();
    this.selectPageAsc = this.db.prepare('SELECT item FROM conversation_items WHERE conversation_id = ? AND position > ? ORDER BY position ASC LIMIT ?').pluck();
    this.selectPageDesc = this.db.prepare('SELECT item FROM conversation_items WHERE conversation_id = ? AND position < ? ORDER BY position DESC LIMIT ?').pluck();

    const insertItems = (id: string, items: readonly Item[]): void => {
      let position = this.selectNextPosition.get(id) as number;
      const now = nowSeconds();
      for (const item of items) this.insertItem.run(id, position++, item.id, JSON.stringify(item), now);
    };
    const append = this.db.transaction((id: string, items: readonly Item[]): boolean => {
      if (!this.selectConversation.get(id)) return false;
      insertItems(id, items);
      return true;
    });
    const create = this.db.transaction((conversation: Conversation, items: readonly Item[], owner: string): void => {
      this.insertConversation.run(conversation.id, conversation.created_at, JSON.stringify(conversation.metadata), owner);
      insertItems(conversation.id, items);
    });
    const remove = this.db.transaction((id: string): boolean => {
      this.deleteAllItems.run(id);
      return this.deleteConversation.run(id).changes > 0;
    });
    // IMMEDIATE: take the write lock up front, so a read-then-write never meets a newer snapshot
    // written by the other connection (which busy_timeout cannot wait out)
    this.appendTx = (id, items) => append.immediate(id, items);
    this.createTx = (conversation, items, owner) => create.immediate(conversation, items, owner);
    this.deleteTx = (id) => remove.immediate(id);
  }

  async create(metadata: Record<string, string>, items: Item[], owner = DEFAULT_TENANT): Promise<Conversation> {
    const conversation: Conversation = { id: newId('conv'), object: 'conversation', created_at: Math.floor(Date.now() / 1000), metadata: { ...metadata } };
    this.createTx(conversation, items.map((item) => normalizeStoredItem(item)), owner);
    return conversation;
  }

  async ownerOf(id: string): Promise<string | undefined> {
    return this.selectOwner.get(id) as string | undefined;
  }

  async get(id: string): Promise<Conversation | undefined> {
    const row = this.selectConversation.get(id) as ConversationRow | undefined;
    return row ? decodeConversation(row) : undefined;
  }

  async update(id: string, metadata: Record<string, string>): Promise<Conversation | undefined> {
    if (this.updateMetadata.run(JSON.stringify(metadata), id).changes === 0) return undefined;
    return this.get(id);
  }

  async delete(id: string): Promise<boolean> {
    return this.deleteTx(id);
  }

  async items(id: string): Promise<Item[] | undefined> {
    if (!this.selectConversation.get(id)) return undefined;
    return (this.selectItems.all(id) as string[]).map(decodeItem);
  }

  async appendItems(id: string, items: Item[]): Promise<boolean> {
    return this.appendTx(id, items.map((item) => normalizeStoredItem(item)));
  }

  async listItems(id: string, options: ListOptions): Promise<ItemPage | undefined> {
    if (!this.selectConversation.get(id)) return undefined;
    const asc = options.order === 'asc';
    let from = asc ? -1 : Number.MAX_SAFE_INTEGER;
    if (options.after !== undefined) {
      const at = (asc ? this.selectFirstPosition : this.selectLastPosition).get(id, options.after) as number | null;
      // an unknown cursor lies past the end (as pageItems treats it)
      if (at === null) return { data: [], firstId: null, lastId: null, hasMore: false };
      from = at;
    }
    // one row beyond the page tells whether there is more
    const rows = (asc ? this.selectPageAsc : this.selectPageDesc).all(id, from, options.limit + 1) as string[];
    return pageFromRows(rows.map(decodeItem), options.limit);
  }

  async getItem(id: string, itemId: string): Promise<Item | undefined> {
    const text = this.selectItem.get(id, itemId) as string | undefined;
    return text === undefined ? undefined : decodeItem(text);
  }

  async acquireTurn(id: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    return this.takeLock.run(id, owner, now + ttlMs, now).changes === 1;
  }

  async renewTurn(id: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.extendLock.run(Date.now() + ttlMs, id, owner).changes === 1;
  }

  async releaseTurn(id: string, owner: string): Promise<void> {
    this.dropLock.run(id, owner);
  }

  async deleteItem(id: string, itemId: string): Promise<boolean> {
    return this.deleteItemRows.run(id, itemId).changes > 0;
  }

  async pruneItems(beforeSeconds: number, limit: number): Promise<number> {
    return this.pruneItemRows.run(beforeSeconds, limit).changes;
  }

  async close(): Promise<void> {
    if (this.ownsDb) this.db.close();
  }
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function decodeConversation(row: ConversationRow): Conversation {
  return { id: row.id, object: 'conversation', created_at: row.created_at, metadata: JSON.parse(row.metadata) };
}

function decodeItem(text: string): Item {
  return JSON.parse(text) as Item;
}

/**
 * The conversation writes of a turn's settlement, run inside the caller's transaction on the same
 * connection (see SqliteResponseStore.settle).
 */
export class SqliteConversationWriter {
  private readonly exists: Database.Statement;
  private readonly nextPosition: Database.Statement;
  private readonly insert: Database.Statement;
  private readonly dropLease: Database.Statement;

  constructor(db: Database.Database) {
    this.exists = db.prepare('SELECT 1 FROM conversations WHERE id = ?');
    this.nextPosition = db.prepare('SELECT COALESCE(MAX(position), -1) + 1 FROM conversation_items WHERE conversation_id = ?').pluck();
    this.insert = db.prepare('INSERT INTO conversation_items (conversation_id, position, item_id, item, created_at) VALUES (?, ?, ?, ?, ?)');
    this.dropLease = db.prepare('DELETE FROM conversation_locks WHERE conversation_id = ? AND owner = ?');
  }

  /**
   * Releases the lease if it is still this owner's: false when another turn took it over (it had
   * expired), and may have changed the conversation since.
   */
  releaseLease(id: string, owner: string): boolean {
    return this.dropLease.run(id, owner).changes === 1;
  }

  /** Appends after the last item; false when the conversation does not exist. */
  append(id: string, items: readonly Item[]): boolean {
    if (!this.exists.get(id)) return false;
    let position = this.nextPosition.get(id) as number;
    const now = nowSeconds();
    for (const item of items) this.insert.run(id, position++, item.id, JSON.stringify(normalizeStoredItem(item)), now);
    return true;
  }
}
