import { invalidRequest } from '../errors.js';
import type { ListOptions } from '../store/store.js';

/** `after`, `limit` (1–100, default 20) and `order` (default desc) of a list endpoint. */
export function parseListQuery(query: URLSearchParams): ListOptions {
  const limitText = query.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidRequest("Invalid 'limit': expected an integer from 1 to 100.", 'limit');
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidRequest("Invalid 'order': expected 'asc' or 'desc'.", 'order');
  return { limit, order, after: query.get('after') ?? undefined };
}
