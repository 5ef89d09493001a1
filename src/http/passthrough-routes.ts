import type { HttpRequest, HttpResponse } from './exchange.js';
import { pipeline } from 'node:stream/promises';
import { invalidRequest } from '../errors.js';
import type { UpstreamRouter } from '../upstream/router.js';
import { readRawBody } from './json.js';
import { noteModel } from '../observability/request-context.js';
import type { Route } from './router.js';
import { abortWhenClientLeaves } from './client-gone.js';
import { utf8Text } from '../util/utf8.js';

/** Upstream answer headers worth passing on; hop-by-hop and length headers are Node's business. */
const FORWARDED_HEADERS = ['content-type', 'cache-control', 'x-request-id'];

/**
 * `POST /v1/chat/completions` and `POST /v1/embeddings` for clients that need no tool loop: the
 * body goes to the upstream chosen by its `model` (aliases and fallbacks as for responses) and
 * the answer comes back byte for byte, streamed as it arrives.
 */
export function passthroughRoutes(router: UpstreamRouter, maxBodyBytes: number): Route[] {
  return [
    { method: 'POST', path: '/v1/chat/completions', handle: (req, res) => forward(router, '/chat/completions', maxBodyBytes, req, res), turn: true },
    { method: 'POST', path: '/v1/embeddings', handle: (req, res) => forward(router, '/embeddings', maxBodyBytes, req, res) },
  ];
}

async function forward(router: UpstreamRouter, path: string, maxBodyBytes: number, req: HttpRequest, res: HttpResponse): Promise<void> {
  const body = await readRawBody(req, maxBodyBytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Text(body));
  } catch (err) {
    throw invalidRequest(`The request body is not valid JSON: ${(err as Error).message}`, null, 'invalid_json');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  const model = (parsed as { model?: unknown }).model;
  if (typeof model !== 'string' || model === '') throw invalidRequest("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  noteModel(req, parsed);

  const { controller, release } = abortWhenClientLeaves(res);
  try {
    const { response } = await router.forward(path, body, model, controller.signal, parsed as Record<string, unknown>);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = response.headers[name];
      if (typeof value === 'string' && !res.hasHeader(name)) headers[name] = value;
    }
    res.writeHead(response.statusCode, headers);
    // the upstream's bytes as they come: SSE framing, [DONE] and all
    await pipeline(response.body, res).catch(() => {
      // client gone or upstream cut mid-stream: the connection ends, nothing more to say
      if (!res.writableEnded) res.destroy();
    });
  } finally {
    release();
  }
}
