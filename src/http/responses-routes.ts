import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, invalidRequest, notFound } from '../errors.js';
import type { Engine } from '../engine/turn.js';
import type { ResponseStore } from '../store/store.js';
import { readJsonBody, sendError, sendJson } from './json.js';
import { SseWriter } from './sse-writer.js';

export interface ResponsesRouteDeps {
  engine: Engine;
  store: ResponseStore;
  maxBodyBytes: number;
}

/** `POST /v1/responses`: validation errors are HTTP errors; once streaming, errors are events. */
export async function createResponse(deps: ResponsesRouteDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJsonBody(req, deps.maxBodyBytes);
  const controller = new AbortController();
  // the client went away before we finished: abort discovery, the upstream request and every tool call
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  res.on('close', onClose);
  try {
    const turn = await deps.engine.prepare(body, controller.signal);
    if (turn.request.stream) {
      const writer = new SseWriter(res);
      try {
        await deps.engine.run(turn, writer.write, controller.signal, () => writer.drained());
      } finally {
        // before the first event a failure is still an HTTP error (handled by the router)
        if (writer.headersSent) writer.end();
      }
      return;
    }
    const response = await deps.engine.run(turn, null, controller.signal);
    if (response.status === 'failed' && response.error) {
      // a blocking turn that failed after generation began: the client gets an error, the failed response stays stored
      sendError(res, new GatewayError(502, 'upstream_error', response.error.code, `${response.error.message} (response ${response.id})`));
      return;
    }
    sendJson(res, 200, response);
  } finally {
    res.off('close', onClose);
  }
}

export async function getResponse(deps: ResponsesRouteDeps, id: string, res: ServerResponse): Promise<void> {
  const record = await deps.store.get(id);
  if (!record) throw notFound(`Response with id '${id}' not found.`);
  sendJson(res, 200, record.response);
}

export async function deleteResponse(deps: ResponsesRouteDeps, id: string, res: ServerResponse): Promise<void> {
  if (!(await deps.store.delete(id))) throw notFound(`Response with id '${id}' not found.`);
  sendJson(res, 200, { id, object: 'response.deleted', deleted: true });
}

export async function listInputItems(deps: ResponsesRouteDeps, id: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
  const limitText = query.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidRequest("Invalid 'limit': expected an integer from 1 to 100.", 'limit');
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidRequest("Invalid 'order': expected 'asc' or 'desc'.", 'order');
  const after = query.get('after') ?? undefined;
  const page = await deps.store.listInputItems(id, { limit, order, after });
  if (!page) throw notFound(`Response with id '${id}' not found.`);
  sendJson(res, 200, { object: 'list', data: page.data, first_id: page.firstId, last_id: page.lastId, has_more: page.hasMore });
}
