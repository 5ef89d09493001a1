import type pg from 'pg';
import type { Item } from '../protocol/responses.js';
import { normalizeStoredItem } from '../util/items.js';
import { quoteIdent } from './postgres-sql.js';

/**
 * Appends items to a conversation inside the caller's transaction (also a turn's settlement, see
 * PostgresResponseStore.settle); false when the conversation does not exist.
 */
export async function appendConversationItems(client: pg.PoolClient, schema: string, id: string, items: readonly Item[]): Promise<boolean> {
  const s = quoteIdent(schema);
  // the row lock queues concurrent appends; the next statement's snapshot sees the previous
  // append committed, so max(position) + 1 is free
  const { rows } = await client.query(`SELECT 1 FROM ${s}.conversations WHERE id = $1 FOR UPDATE`, [id]);
  if (rows.length === 0) return false;
  if (items.length === 0) return true;
  const normalized = items.map((item) => normalizeStoredItem(item));
  await client.query(
    `INSERT INTO ${s}.conversation_items (conversation_id, position, item_id, item)
     SELECT $1, next.base + i.ordinality - 1, i.item_id, i.item::json
     FROM (SELECT COALESCE(MAX(position), -1) + 1 AS base FROM ${s}.conversation_items WHERE conversation_id = $1) AS next,
          unnest($2::text[], $3::text[]) WITH ORDINALITY AS i(item_id, item, ordinality)`,
    [id, normalized.map((item) => item.id), normalized.map((item) => JSON.stringify(item))],
  );
  return true;
}
