import { invalidRequest } from '../errors.js';
import type { InputItem, Item, ResolvedInputItem } from '../protocol/responses.js';
import type { ResponseStore } from '../store/store.js';

/** Whether `input` names stored items (`item_reference`): without one it is used as it is. */
export function hasItemReferences(input: readonly InputItem[]): boolean {
  return input.some((item) => item.type === 'item_reference');
}

/**
 * `item_reference` input items are replaced by the items they name, as stored: from the turn's
 * history (previous response chain, conversation) or this input first, else from any stored
 * response of the same tenant. An id that names nothing is the client's mistake: a `400` naming `input[n].id`.
 */
export async function resolveItemReferences(input: readonly InputItem[], history: readonly Item[], store: ResponseStore, tenant?: string): Promise<ResolvedInputItem[]> {
  if (!hasItemReferences(input)) return input as ResolvedInputItem[];
  const known = new Map<string, ResolvedInputItem>();
  for (const item of history) known.set(item.id, item);
  const out: ResolvedInputItem[] = [];
  for (const [i, item] of input.entries()) {
    if (item.type !== 'item_reference') {
      if (typeof item.id === 'string') known.set(item.id, item);
      out.push(item);
      continue;
    }
    const id = item.id;
    const found = known.get(id) ?? (await store.findItem(id, tenant));
    if (!found) throw invalidRequest(`Item with id '${id}' not found.`, `input[${i}].id`, 'item_not_found');
    out.push(structuredClone(found));
  }
  return out;
}
