import type { HttpRequest, HttpResponse } from './exchange.js';
import { invalidRequest } from '../errors.js';
import { compactConversation, keptPublicItems, type CompactionResult } from '../engine/compaction.js';
import { countInputTokens } from '../engine/token-count.js';
import type { Engine } from '../engine/turn.js';
import type { ReasoningReplay } from '../protocol/chat.js';
import type { Item, JsonObject, ResolvedInputItem } from '../protocol/responses.js';
import type { UpstreamClient } from '../upstream/client.js';
import { APPROVAL_GATES } from '../tools/registry.js';
import { newId } from '../util/ids.js';
import { isModelProduced, normalizeStoredItem } from '../util/items.js';
import { validateInputItem } from '../engine/request.js';
import { isPlainObject } from '../tools/validate.js';
import { readJsonBody, sendJson } from './json.js';
import type { Route } from './router.js';
import { tenantOf } from '../observability/request-context.js';
import { abortWhenClientLeaves } from './client-gone.js';

export interface CompactRouteDeps {
  engine: Engine;
  upstream: UpstreamClient;
  /** The upstream's OpenAI base URL (`…/v1`); `/tokenize` is asked at its root. */
  upstreamBaseUrl: string;
  maxBodyBytes: number;
  /** The upstream's API key, sent to `/tokenize` too. */
  upstreamApiKey?: string;
  /** config `upstream.reasoningReplay`: how `/tokenize` sees reasoning items. */
  reasoningReplay?: ReasoningReplay;
  /** Default 2 s. */
  tokenizeTimeoutMs?: number;
}

/**
 * `POST /v1/responses/compact` and `POST /v1/responses/input_tokens` (responses-api.md §6).
 * Both build the conversation exactly as `POST /v1/responses` would (`Engine.prepare`, with
 * `store: false`), so validation errors and `previous_response_id` lookups behave the same;
 * errors are thrown as GatewayError for the router's caller to send.
 */
export function compactRoutes(deps: CompactRouteDeps): Route[] {
  return [
    { method: 'POST', path: '/v1/responses/compact', handle: (req, res) => compact(deps, req, res), turn: true },
    { method: 'POST', path: '/v1/responses/input_tokens', handle: (req, res) => inputTokens(deps, req, res) },
  ];
}

/**
 * Body `{model (required), input?, instructions?, previous_response_id?}` (other compact
 * parameters, e.g. `prompt_cache_key`, are accepted and ignored) → `{id, object:
 * "response.compaction", created_at, output: [compaction, ...kept items], usage}`.
 */
async function compact(deps: CompactRouteDeps, req: HttpRequest, res: HttpResponse): Promise<void> {
  const body = objectBody(await readJsonBody(req, deps.maxBodyBytes));
  await withAbort(res, async (signal) => sendJson(res, 200, await compactBody(deps, body, req, signal)));
}

/** The compaction of a compact (or create) request body: `[compaction item, ...kept items]`. */
export async function compactBody(deps: CompactRouteDeps, body: JsonObject, req: HttpRequest, signal: AbortSignal, options: { keepNothing?: boolean } = {}): Promise<CompactionResult> {
  const { input, pending } = splitPendingApprovals(body.input);
  const turn = await deps.engine.prepare(
    { model: body.model, input, instructions: body.instructions, previous_response_id: body.previous_response_id, store: false },
    signal,
    { dryRun: true, tenant: tenantOf(req) },
  );
  // the history the engine loaded for the turn (not read again)
  const publicItems = [...turn.history, ...withPending(turn.inputItems, pending)];
  return compactConversation(deps.upstream, {
    model: turn.request.model,
    items: turn.conversation,
    keptItems: options.keepNothing ? [] : keptPublicItems(publicItems),
    leading: turn.request.instructions ? 1 : 0,
    signal,
    everything: options.keepNothing,
  });
}

/**
 * Body like a create request (`model, input, instructions, tools, tool_choice,
 * previous_response_id, …`; `stream`, `store` and `background` are ignored) →
 * `{object: "response.input_tokens", input_tokens}`. The count comes from the upstream's vLLM
 * `/tokenize` when it answers within the timeout, else from `estimateTokens`; the header
 * `x-switchyard-token-count` says which (`upstream` | `estimate`).
 */
async function inputTokens(deps: CompactRouteDeps, req: HttpRequest, res: HttpResponse): Promise<void> {
  const body = objectBody(await readJsonBody(req, deps.maxBodyBytes));
  await withAbort(res, async (signal) => {
    const { input } = splitPendingApprovals(body.input);
    const { background: _background, stream: _stream, ...rest } = body;
    const turn = await deps.engine.prepare({ ...rest, input, store: false }, signal, { dryRun: true, tenant: tenantOf(req) });
    const count = await countInputTokens(deps.upstreamBaseUrl, turn.request.model, turn.conversation, turn.tools, signal, {
      apiKey: deps.upstreamApiKey,
      reasoningReplay: deps.reasoningReplay,
      timeoutMs: deps.tokenizeTimeoutMs,
    });
    sendJson(res, 200, { object: 'response.input_tokens', input_tokens: count.tokens }, { 'x-switchyard-token-count': count.method });
  });
}

function objectBody(body: unknown): JsonObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
  return body as JsonObject;
}

/** Runs `fn` with a signal that aborts when the client goes away before the answer is sent. */
export async function withAbort(res: HttpResponse, fn: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const { controller, release } = abortWhenClientLeaves(res);
  try {
    await fn(controller.signal);
  } finally {
    release();
  }
}

/** Item types that answer an approval request (each tool type's gate names its own). */
const ANSWER_TYPES = new Set(APPROVAL_GATES.map((gate) => gate.answerItemType));

interface Pending {
  /** Index in the original input. */
  index: number;
  item: ResolvedInputItem;
}

/**
 * A turn checks the approvals answered by `mcp_approval_response` items after the input's last
 * model-produced item (its tool type's gate), and uses them up when it runs (src/engine/approvals.ts) — a count or a
 * compaction must neither use them up nor be refused for them. Those items are
 * left out of what is prepared (and put back among the kept items of a compaction).
 */
function splitPendingApprovals(input: unknown): { input: unknown; pending: Pending[] } {
  if (!Array.isArray(input)) return { input, pending: [] };
  let lastModelItem = -1;
  input.forEach((item: unknown, i) => {
    if (isPlainObject(item) && isModelProduced(item)) lastModelItem = i;
  });
  const pending: Pending[] = [];
  const kept: unknown[] = [];
  input.forEach((item: unknown, i) => {
    // set aside, but checked as any input item is (by its tool type's validator)
    if (i > lastModelItem && isPlainObject(item) && typeof item.type === 'string' && ANSWER_TYPES.has(item.type)) pending.push({ index: i, item: validateAnswer(item, `input[${i}]`) });
    else kept.push(item);
  });
  return { input: kept, pending };
}

/** The prepared input items with the set-aside approval answers back in their places (with ids). */
function withPending(inputItems: readonly Item[], pending: readonly Pending[]): Item[] {
  const out = [...inputItems];
  for (const { index, item } of pending) out.splice(index, 0, typeof item.id === 'string' ? normalizeStoredItem(item) : normalizeStoredItem({ id: newId('mcpa'), ...item }));
  return out;
}

function validateAnswer(item: JsonObject, param: string): ResolvedInputItem {
  const checked = validateInputItem(item, param);
  // never taken (an answer is not a reference); narrows the type
  if (checked.type === 'item_reference') throw invalidRequest(`Invalid value for '${param}.type'.`, `${param}.type`, 'invalid_value');
  return checked;
}
