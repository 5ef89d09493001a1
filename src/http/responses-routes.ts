import type { HttpRequest, HttpResponse } from './exchange.js';
import { Errors, type ErrorCode, invalidRequest, notFound } from '../errors.js';
import type { BackgroundRunner } from '../engine/background.js';
import type { Engine, RunOutcome } from '../engine/turn.js';
import type { ResponseStore } from '../store/store.js';
import type { InflightTurns } from './inflight.js';
import { jsonBody, readRawBody, sendError, sendJson, sendJsonText } from './json.js';
import { parseListQuery } from './list-query.js';
import { SseWriter } from './sse-writer.js';
import { admitStream, tenantOf } from '../observability/request-context.js';
import { DEFAULT_TENANT } from '../store/tenant.js';
import { pageItems, type StoredResponse } from '../store/store.js';
import { abortWhenClientLeaves } from './client-gone.js';
import { turnSlot } from './loop-slices.js';

export interface ResponsesRouteDeps {
  engine: Engine;
  store: ResponseStore;
  background: BackgroundRunner;
  maxBodyBytes: number;
  /** Foreground turns, for a graceful shutdown. */
  inflight?: InflightTurns;
  /** A create request whose input ends in `compaction_trigger` (Codex's remote compaction v2). */
  compactOnTrigger?: (body: Record<string, unknown>, req: HttpRequest, res: HttpResponse) => Promise<void>;
}

/** `POST /v1/responses`: validation errors are HTTP errors; once streaming, errors are events. */
export async function createResponse(deps: ResponsesRouteDeps, req: HttpRequest, res: HttpResponse): Promise<void> {
  const body = jsonBody(req, await readRawBody(req, deps.maxBodyBytes));
  const input = (body as { input?: unknown } | null)?.input;
  if (deps.compactOnTrigger && Array.isArray(input) && (input.at(-1) as { type?: unknown } | null)?.type === 'compaction_trigger') {
    return deps.compactOnTrigger(body as Record<string, unknown>, req, res);
  }
  if ((body as { stream?: unknown } | null)?.stream === true) admitStream(res);
  const { controller, release } = abortWhenClientLeaves(res);
  const inflight = deps.inflight?.add(controller);
  try {
    // in a burst of new requests, each starts in its share of a loop turn (loop-slices.ts)
    const slot = turnSlot();
    if (slot) await slot;
    const turn = await deps.engine.prepare(body, controller, { tenant: tenantOf(req) });
    if (turn.request.background) {
      // the run belongs to the gateway now: a client leaving does not stop it
      if (!turn.request.stream) {
        const { response } = await deps.background.launch(turn);
        sendJson(res, 200, response);
        return;
      }
      const writer = new SseWriter(res);
      const { done } = await deps.background.launch(turn, writer.write);
      await done.catch(() => undefined);
      writer.end();
      return;
    }
    if (turn.request.stream) {
      const writer = new SseWriter(res);
      try {
        // the route's client-gone controller is the run's own (one controller per request)
        await deps.engine.run(turn, writer.write, controller, () => writer.drained(), { controller });
      } finally {
        // before the first event a failure is still an HTTP error (handled by the router)
        if (writer.headersSent) writer.end();
      }
      return;
    }
    const outcome: RunOutcome = {};
    const response = await deps.engine.run(turn, null, controller, undefined, { controller, outcome });
    if (response.status === 'failed' && response.error) {
      // a blocking turn that failed after generation began: the client gets an error (the upstream
      // failure's own status where known), the failed response stays stored
      const cause = outcome.failure;
      sendError(res, Errors.turnFailed(cause, response.error.code as ErrorCode, `${response.error.message} (response ${response.id})`));
      return;
    }
    // a stored turn's JSON was made for its row: the same text
    if (outcome.responseJson !== undefined) sendJsonText(res, 200, outcome.responseJson);
    else sendJson(res, 200, response);
  } finally {
    release();
    if (inflight) deps.inflight!.delete(inflight);
  }
}

/** The stored response `id` if it is the tenant's; another tenant's is as absent as an unknown id. */
async function ownedResponse(deps: ResponsesRouteDeps, id: string, tenant: string): Promise<StoredResponse> {
  const record = await deps.store.get(id);
  if (!record || (record.owner ?? DEFAULT_TENANT) !== tenant) throw notFound(`Response with id '${id}' not found.`);
  return record;
}

export async function getResponse(deps: ResponsesRouteDeps, req: HttpRequest, id: string, query: URLSearchParams, res: HttpResponse): Promise<void> {
  const record = await ownedResponse(deps, id, tenantOf(req));
  if (query.get('stream') !== 'true') {
    sendJson(res, 200, record.response);
    return;
  }
  // resume the event stream of a background response after `starting_after`
  if (!record.response.background) throw invalidRequest('Only background responses can be streamed with GET; this response was not created with background: true.', 'stream', 'invalid_value');
  const afterText = query.get('starting_after');
  const after = afterText === null ? -1 : Number(afterText);
  if (!Number.isInteger(after) || after < -1) throw invalidRequest("Invalid 'starting_after': expected a sequence number.", 'starting_after', 'invalid_value');
  admitStream(res);
  const writer = new SseWriter(res);
  writer.open();
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  try {
    await deps.background.follow(id, after, (json) => writer.write(eventType(json), json), controller.signal);
  } finally {
    writer.end();
  }
}

/** `POST /v1/responses/{id}/cancel`: only background runs can be cancelled. */
export async function cancelResponse(deps: ResponsesRouteDeps, req: HttpRequest, id: string, res: HttpResponse): Promise<void> {
  const record = await ownedResponse(deps, id, tenantOf(req));
  if (!record.response.background) throw invalidRequest('Only responses created with background: true can be cancelled.', null, 'response_not_cancellable');
  if (record.response.status !== 'queued' && record.response.status !== 'in_progress') {
    sendJson(res, 200, record.response);
    return;
  }
  const local = await deps.background.cancel(id);
  if (local) {
    sendJson(res, 200, local);
    return;
  }
  // owned by another replica: it sees the request on its next heartbeat
  for (let waited = 0; waited < 10_000; waited += 100) {
    const current = await deps.store.get(id);
    if (current && current.response.status !== 'queued' && current.response.status !== 'in_progress') {
      sendJson(res, 200, current.response);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  sendJson(res, 200, (await deps.store.get(id))?.response ?? record.response);
}

function eventType(json: string): string {
  return json.slice(9, json.indexOf('"', 9));
}

export async function deleteResponse(deps: ResponsesRouteDeps, req: HttpRequest, id: string, res: HttpResponse): Promise<void> {
  const record = await ownedResponse(deps, id, tenantOf(req));
  // a running response would be written back by its own next save: it must finish (or be cancelled) first
  if (record.response.status === 'queued' || record.response.status === 'in_progress') {
    throw invalidRequest(`Response '${id}' is still ${record.response.status}; cancel it or wait for it to finish before deleting it.`, null, 'response_in_progress');
  }
  if (!(await deps.store.delete(id))) throw notFound(`Response with id '${id}' not found.`);
  sendJson(res, 200, { id, object: 'response.deleted', deleted: true });
}

export async function listInputItems(deps: ResponsesRouteDeps, req: HttpRequest, id: string, query: URLSearchParams, res: HttpResponse): Promise<void> {
  const options = parseListQuery(query);
  const page = pageItems((await ownedResponse(deps, id, tenantOf(req))).inputItems, options);
  sendJson(res, 200, { object: 'list', data: page.data, first_id: page.firstId, last_id: page.lastId, has_more: page.hasMore });
}
