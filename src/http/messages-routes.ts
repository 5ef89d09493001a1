import type { HttpRequest, HttpResponse } from './exchange.js';
import { Errors, GatewayError, notFound } from '../errors.js';
import { countInputTokens, estimateTokens } from '../engine/token-count.js';
import type { Engine } from '../engine/turn.js';
import type { PreparedTurn, RunOutcome } from '../engine/types.js';
import type { Logger } from '../util/logger.js';
import { sendMessagesError } from '../messages/errors.js';
import { MessageFold } from '../messages/fold.js';
import { ModelLimits } from '../messages/model-limits.js';
import { decodeMessagesRequest, type DecodedMessagesRequest } from '../messages/request.js';
import { MessagesStreamEncoder } from '../messages/stream-encoder.js';
import { messagesEventJson } from '../messages/event-json.js';
import type { ReasoningReplay } from '../protocol/chat.js';
import type { MessagesStreamEvent } from '../protocol/messages.js';
import { newId } from '../util/ids.js';
import { readMessagesBody, sendJson } from './json.js';
import type { Route } from './router.js';
import { SseWriter } from './sse-writer.js';
import { admitStream, tenantOf } from '../observability/request-context.js';
import { abortWhenClientLeaves } from './client-gone.js';
import { turnSlot } from './loop-slices.js';

export interface MessagesRouteDeps {
  engine: Engine;
  log: Logger & { debug?(obj: object, msg?: string): void };
  maxBodyBytes: number;
  /** The upstream's model list, as `GET /v1/models` passes it through. */
  listModels: () => Promise<unknown>;
  /** For `count_tokens`: the upstream's OpenAI base URL (`/tokenize` is asked at its root). */
  upstreamBaseUrl: string;
  upstreamApiKey?: string;
  reasoningReplay?: ReasoningReplay;
}

/** Anthropic's `ping` event, written as the stream's keep-alive (the SDKs skip it). */
const PING = 'event: ping\ndata: {"type":"ping"}\n\n';

/**
 * The Anthropic Messages surface (reference: docs/reference/anthropic-messages.md) over the same
 * engine as `/v1/responses`: requests are decoded at the edge into the engine's create request,
 * the engine's public events are encoded as Messages events, and a blocking answer is their fold.
 * Every failure before the first byte is an Anthropic-shaped error; after it, an `error` event.
 */
export function messagesRoutes(deps: MessagesRouteDeps): Route[] {
  const limits = new ModelLimits(deps.listModels);
  return [
    { method: 'POST', path: '/v1/messages', handle: (req, res) => withErrors(deps, res, (id) => createMessage(deps, limits, req, res, id)), turn: true },
    { method: 'POST', path: '/v1/messages/count_tokens', handle: (req, res) => withErrors(deps, res, (id) => countTokens(deps, req, res, id)) },
    // asked with `anthropic-version` (the Anthropic SDKs): Anthropic's list shape; else the OpenAI passthrough
    { method: 'GET', path: '/v1/models', handle: (req, res) => (req.headers['anthropic-version'] ? withErrors(deps, res, (id) => listModels(deps, res, id)) : listOpenAiModels(deps, res)) },
    { method: 'GET', path: /^\/v1\/models\/([^/]+)$/, handle: (req, res, [model]) => (req.headers['anthropic-version'] ? withErrors(deps, res, (id) => getModel(deps, model, res, id)) : getOpenAiModel(deps, model, res)) },
  ];
}

async function withErrors(deps: MessagesRouteDeps, res: HttpResponse, handle: (requestId: string) => Promise<void>): Promise<void> {
  const requestId = newId('req');
  res.setHeader('request-id', requestId);
  try {
    await handle(requestId);
  } catch (err) {
    if (!(err instanceof GatewayError)) deps.log.error({ err }, 'messages request failed');
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    if (!res.destroyed) sendMessagesError(res, err, requestId);
  }
}

async function createMessage(deps: MessagesRouteDeps, limits: ModelLimits, req: HttpRequest, res: HttpResponse, requestId: string): Promise<void> {
  const decoded = decodeMessagesRequest(await readMessagesBody(req, deps.maxBodyBytes));
  logIgnored(deps, decoded, requestId);
  if (decoded.stream) admitStream(res);
  const { controller, release } = abortWhenClientLeaves(res);
  try {
    // in a burst of new requests, each starts in its share of a loop turn (loop-slices.ts)
    await turnSlot();
    const prepared = await deps.engine.prepare(decoded.body, controller, { tenant: tenantOf(req) });
    const turn = { ...prepared, base: await clampMaxTokens(prepared, withSampling(prepared.base, decoded), limits) };
    const outcome: RunOutcome = {};
    if (decoded.stream) {
      const writer = new SseWriter(res, PING);
      const encoder = new MessagesStreamEncoder((event) => writer.write(event.type, messagesEventJson(event)), () => outcome.failure?.status, () => outcome.stopSequence, () => outcome.response);
      try {
        await deps.engine.run(turn, (type, json, head, delta) => encoder.push(type, json, head, delta), controller, () => writer.drained(), { controller, outcome, readsResponse: true });
      } finally {
        // before the first event a failure is still an HTTP error (withErrors)
        if (writer.headersSent) writer.end();
      }
      return;
    }
    const fold = new MessageFold();
    const encoder = new MessagesStreamEncoder((event: MessagesStreamEvent) => fold.push(event), () => outcome.failure?.status, () => outcome.stopSequence, () => outcome.response);
    await deps.engine.run(turn, (type, json, head, delta) => encoder.push(type, json, head, delta), controller, undefined, { controller, outcome, readsResponse: true });
    if (fold.error || !fold.result) {
      // failed after generation began: the upstream failure's own status where known
      const cause = outcome.failure;
      throw Errors.turnFailed(cause, 'upstream_error', fold.error?.message ?? 'The turn failed.');
    }
    sendJson(res, 200, fold.result, { 'request-id': requestId });
  } finally {
    release();
  }
}

/** Sampling options the Responses body has no field for go to the upstream request directly. */
function withSampling(base: PreparedTurn['base'], decoded: DecodedMessagesRequest): PreparedTurn['base'] {
  return {
    ...base,
    ...(decoded.stopSequences.length > 0 ? { stop: decoded.stopSequences } : {}),
    ...(decoded.topK !== null ? { topK: decoded.topK } : {}),
  };
}

/**
 * `max_tokens` above what the model can still produce (its context length minus the estimated
 * input) is left out of the upstream request: the server then generates up to the end of the
 * context — the same as clamping, and never a failed request (issue part 6).
 */
async function clampMaxTokens(turn: PreparedTurn, base: PreparedTurn['base'], limits: ModelLimits): Promise<PreparedTurn['base']> {
  const requested = base.maxOutputTokens;
  if (requested === undefined) return base;
  const context = await limits.contextLength(turn.request.model);
  if (context === undefined || requested < context - estimateTokens(turn.conversation, turn.tools)) return base;
  const { maxOutputTokens: _left, ...rest } = base;
  return rest;
}

/** `POST /v1/messages/count_tokens` → `{input_tokens}`: the upstream's tokenizer where it has one, else the estimate. */
async function countTokens(deps: MessagesRouteDeps, req: HttpRequest, res: HttpResponse, requestId: string): Promise<void> {
  // the conversation a client is about to send: its messages taken as kept where it sent them before
  const raw = await readMessagesBody(req, deps.maxBodyBytes);
  // count_tokens takes a create request without max_tokens
  const decoded = decodeMessagesRequest(raw, { requireMaxTokens: false });
  logIgnored(deps, decoded, requestId);
  if (decoded.stream) admitStream(res);
  const { controller, release } = abortWhenClientLeaves(res);
  try {
    const turn = await deps.engine.prepare({ ...decoded.body, stream: false }, controller.signal, { dryRun: true, tenant: tenantOf(req) });
    const count = await countInputTokens(deps.upstreamBaseUrl, turn.request.model, turn.conversation, turn.tools, controller.signal, {
      apiKey: deps.upstreamApiKey,
      reasoningReplay: deps.reasoningReplay,
    });
    sendJson(res, 200, { input_tokens: count.tokens }, { 'request-id': requestId, 'x-switchyard-token-count': count.method });
  } finally {
    release();
  }
}

interface ListedModel {
  id?: unknown;
  created?: unknown;
}

async function upstreamModels(deps: MessagesRouteDeps): Promise<Array<ListedModel & { id: string }>> {
  const upstream = (await deps.listModels()) as { data?: ListedModel[] } | null;
  return (Array.isArray(upstream?.data) ? upstream!.data : []).filter((m): m is ListedModel & { id: string } => typeof m.id === 'string');
}

/** A listed model in Anthropic's shape. */
function anthropicModel(m: ListedModel & { id: string }) {
  return { type: 'model', id: m.id, display_name: m.id, created_at: new Date((typeof m.created === 'number' ? m.created : 0) * 1000).toISOString() };
}

/** `GET /v1/models` in Anthropic's shape: `{data: [{type: "model", id, display_name, created_at}], has_more, first_id, last_id}`. */
async function listModels(deps: MessagesRouteDeps, res: HttpResponse, requestId: string): Promise<void> {
  const data = (await upstreamModels(deps)).map(anthropicModel);
  sendJson(res, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }, { 'request-id': requestId });
}

async function listOpenAiModels(deps: MessagesRouteDeps, res: HttpResponse): Promise<void> {
  sendJson(res, 200, await deps.listModels());
}

/** `GET /v1/models/{id}` (Anthropic's shape): one of the upstream's listed models, else 404. */
async function getModel(deps: MessagesRouteDeps, id: string, res: HttpResponse, requestId: string): Promise<void> {
  const model = (await upstreamModels(deps)).find((m) => m.id === id);
  if (!model) throw notFound(`model: ${id}`, 'model_not_found', 'model');
  sendJson(res, 200, anthropicModel(model), { 'request-id': requestId });
}

/** `GET /v1/models/{id}` for OpenAI clients: the upstream's own entry. */
async function getOpenAiModel(deps: MessagesRouteDeps, id: string, res: HttpResponse): Promise<void> {
  const model = (await upstreamModels(deps)).find((m) => m.id === id);
  if (!model) throw notFound(`The model '${id}' does not exist.`, 'model_not_found', 'model');
  sendJson(res, 200, model);
}

function logIgnored(deps: MessagesRouteDeps, decoded: DecodedMessagesRequest, requestId: string): void {
  if (decoded.ignored.length > 0) deps.log.debug?.({ requestId, ignored: decoded.ignored }, 'messages: accepted and ignored');
}
