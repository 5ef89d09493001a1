import type { Item } from '../protocol/responses.js';
import type { ItemPage, ListOptions } from './store.js';

/** The Conversations API object. */
export interface Conversation {
  id: string;
  object: 'conversation';
  created_at: number;
  metadata: Record<string, string>;
}

/**
 * Conversations: an ordered, durable list of items that `conversation` on create prepends to a
 * turn and extends with the turn's input and output. Same database as the responses.
 */
export interface ConversationStore {
  /** A new conversation of tenant `owner` (the default tenant when absent). */
  create(metadata: Record<string, string>, items: Item[], owner?: string): Promise<Conversation>;
  get(id: string): Promise<Conversation | undefined>;
  /** The tenant a conversation belongs to; undefined when it does not exist. */
  ownerOf(id: string): Promise<string | undefined>;
  /** Replaces the metadata; undefined when the conversation does not exist. */
  update(id: string, metadata: Record<string, string>): Promise<Conversation | undefined>;
  delete(id: string): Promise<boolean>;
  /** Every item, oldest first; undefined when the conversation does not exist. */
  items(id: string): Promise<Item[] | undefined>;
  /** Appends items (each must carry an id); false when the conversation does not exist. */
  appendItems(id: string, items: Item[]): Promise<boolean>;
  listItems(id: string, options: ListOptions): Promise<ItemPage | undefined>;
  getItem(id: string, itemId: string): Promise<Item | undefined>;
  deleteItem(id: string, itemId: string): Promise<boolean>;
  /**
   * Takes the conversation for one turn (a lease that expires after `ttlMs`, should its holder
   * die): false while another turn — on any replica — holds it. Acquiring it again with the same
   * `owner` renews it; a lease that expired and was taken by another is lost.
   */
  acquireTurn(id: string, owner: string, ttlMs: number): Promise<boolean>;
  /**
   * Extends a lease `owner` still has to `ttlMs` from now; false when it has none (released, or
   * expired and taken by another). Never takes the conversation: a heartbeat's renewal that runs
   * just after the turn released its lease must not take it back for nobody.
   */
  renewTurn(id: string, owner: string, ttlMs: number): Promise<boolean>;
  releaseTurn(id: string, owner: string): Promise<void>;
  /** Retention: deletes up to `limit` items added before `beforeSeconds` (epoch seconds); returns how many. */
  pruneItems(beforeSeconds: number, limit: number): Promise<number>;
  close(): Promise<void>;
}
