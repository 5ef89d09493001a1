import type { HttpRequest } from './exchange.js';
import { invalidRequest, notFound, type GatewayError } from '../errors.js';
import { parseMetadata, validateInputItem } from '../engine/request.js';
import type { Item, JsonObject } from '../protocol/responses.js';
import type { Conversation, ConversationStore } from '../store/conversations.js';
import { normalizeStoredItem } from '../util/items.js';
import { isPlainObject } from '../tools/validate.js';
import { readJsonBody, sendJson } from './json.js';
import { parseListQuery } from './list-query.js';
import type { Route } from './router.js';
import { tenantOf } from '../observability/request-context.js';

/** At most this many items per create / append request (as OpenAI limits them). */
export const MAX_ITEMS_PER_REQUEST = 20;

const CONVERSATION = /^\/v1\/conversations\/([^/]+)$/;
const ITEMS = /^\/v1\/conversations\/([^/]+)\/items$/;
const ITEM = /^\/v1\/conversations\/([^/]+)\/items\/([^/]+)$/;

/** The Conversations API: `/v1/conversations` and its items, over a ConversationStore. */
export function conversationRoutes(store: ConversationStore, maxBodyBytes: number): Route[] {
  const body = async (req: HttpRequest): Promise<JsonObject> => {
    const value = await readJsonBody(req, maxBodyBytes);
    if (!isPlainObject(value)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
    return value;
  };
  const conversation = async (id: string): Promise<Conversation> => {
    const found = await store.get(id);
    if (!found) throw conversationNotFound(id);
    return found;
  };

  // every route on one conversation: another tenant's conversation is as absent as an unknown id
  const owned = (route: Route): Route => ({
    ...route,
    handle: async (req, res, params, query) => {
      if ((await store.ownerOf(params[0])) !== tenantOf(req)) throw conversationNotFound(params[0]);
      await route.handle(req, res, params, query);
    },
  });

  const routes: Route[] = [
    {
      method: 'POST',
      path: '/v1/conversations',
      handle: async (req, res) => {
        const request = await body(req);
        const items = parseItems(request.items, false);
        const metadata = parseMetadata(request.metadata);
        sendJson(res, 200, await store.create(metadata, items, tenantOf(req)));
      },
    },
    {
      method: 'GET',
      path: CONVERSATION,
      handle: async (_req, res, [id]) => sendJson(res, 200, await conversation(id)),
    },
    {
      method: 'POST',
      path: CONVERSATION,
      handle: async (req, res, [id]) => {
        const request = await body(req);
        if (request.metadata === undefined) throw invalidRequest("Missing required parameter: 'metadata'.", 'metadata', 'missing_required_parameter');
        const updated = await store.update(id, parseMetadata(request.metadata));
        if (!updated) throw conversationNotFound(id);
        sendJson(res, 200, updated);
      },
    },
    {
      method: 'DELETE',
      path: CONVERSATION,
      handle: async (_req, res, [id]) => {
        if (!(await store.delete(id))) throw conversationNotFound(id);
        sendJson(res, 200, { id, object: 'conversation.deleted', deleted: true });
      },
    },
    {
      method: 'POST',
      path: ITEMS,
      handle: async (req, res, [id]) => {
        const request = await body(req);
        const items = parseItems(request.items, true);
        if (!(await store.appendItems(id, items))) throw conversationNotFound(id);
        sendJson(res, 200, listBody(items, false));
      },
    },
    {
      method: 'GET',
      path: ITEMS,
      handle: async (_req, res, [id], query) => {
        // `include` asks for extra fields the gateway does not store; it is accepted and ignored
        const page = await store.listItems(id, parseListQuery(query));
        if (!page) throw conversationNotFound(id);
        sendJson(res, 200, { object: 'list', data: page.data, first_id: page.firstId, last_id: page.lastId, has_more: page.hasMore });
      },
    },
    {
      method: 'GET',
      path: ITEM,
      handle: async (_req, res, [id, itemId]) => {
        const item = await store.getItem(id, itemId);
        if (!item) {
          await conversation(id);
          throw itemNotFound(id, itemId);
        }
        sendJson(res, 200, item);
      },
    },
    {
      method: 'DELETE',
      path: ITEM,
      handle: async (_req, res, [id, itemId]) => {
        if (!(await store.deleteItem(id, itemId))) {
          await conversation(id);
          throw itemNotFound(id, itemId);
        }
        // as OpenAI does: the conversation the item was removed from
        sendJson(res, 200, await conversation(id));
      },
    },
  ];
  return routes.map((route) => (route.path === '/v1/conversations' ? route : owned(route)));
}

function listBody(items: readonly Item[], hasMore: boolean): JsonObject {
  return {
    object: 'list',
    data: items,
    first_id: items.length > 0 ? items[0].id : null,
    last_id: items.length > 0 ? items[items.length - 1].id : null,
    has_more: hasMore,
  };
}

/** Validates `items` (each as an input item) and gives each its stored form, id included. */
function parseItems(value: unknown, required: boolean): Item[] {
  if (value === undefined || value === null) {
    if (required) throw invalidRequest("Missing required parameter: 'items'.", 'items', 'missing_required_parameter');
    return [];
  }
  if (!Array.isArray(value)) throw invalidRequest("Invalid type for 'items': expected an array of items.", 'items', 'invalid_type');
  if (required && value.length === 0) {
    throw invalidRequest("Invalid 'items': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'items', 'empty_array');
  }
  if (value.length > MAX_ITEMS_PER_REQUEST) {
    throw invalidRequest(
      `Invalid 'items': array too long. Expected an array with maximum length ${MAX_ITEMS_PER_REQUEST}, but got an array with length ${value.length} instead.`,
      'items',
      'array_above_max_length',
    );
  }
  return value.map((raw: unknown, i) => {
    const param = `items[${i}]`;
    const item = validateInputItem(raw, param);
    // a reference only means something inside a turn; a conversation holds the items themselves
    if (item.type === 'item_reference') throw invalidRequest(`Invalid value for '${param}.type': an item_reference cannot be stored in a conversation; add the item itself.`, `${param}.type`, 'invalid_value');
    if (item.id !== undefined && (typeof item.id !== 'string' || item.id.length === 0)) throw invalidRequest(`Invalid type for '${param}.id': expected a non-empty string.`, `${param}.id`, 'invalid_type');
    return normalizeStoredItem(item);
  });
}

function conversationNotFound(id: string): GatewayError {
  return notFound(`Conversation with id '${id}' not found.`, 'conversation_not_found');
}

function itemNotFound(conversationId: string, itemId: string): GatewayError {
  return notFound(`Item with id '${itemId}' not found in conversation '${conversationId}'.`, 'item_not_found');
}
