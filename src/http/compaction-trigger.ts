import type { HttpRequest, HttpResponse } from './exchange.js';
import type { JsonObject } from '../protocol/responses.js';
import { newId } from '../util/ids.js';
import { compactBody, withAbort, type CompactRouteDeps } from './compact-routes.js';
import { sendJson } from './json.js';
import { SseWriter } from './sse-writer.js';

/**
 * Codex's remote compaction (it announces `x-codex-beta-features: remote_compaction_v2`): an
 * otherwise normal `POST /v1/responses` whose input ends in `{"type": "compaction_trigger"}`. It
 * is answered like `POST /v1/responses/compact` — the whole history summarized into one opaque
 * `compaction` item — but as a response (streamed when asked), which is what Codex waits for: the compaction item's `output_item.done`, then
 * `response.completed`. Nothing is stored; the compaction item expands back into the summary when
 * it comes back as input.
 */
export function compactionTriggerHandler(deps: CompactRouteDeps) {
  return async (body: Record<string, unknown>, req: HttpRequest, res: HttpResponse): Promise<void> => {
    const input = (body.input as unknown[]).slice(0, -1);
    await withAbort(res, async (signal) => {
      // Codex keeps its own user messages and replaces everything else with the compaction item:
      // the summary covers the whole history, tool calls after the last user message included
      const result = await compactBody(deps, { ...(body as JsonObject), input: input as JsonObject[] }, req, signal, { keepNothing: true });
      const response = {
        id: newId('resp'),
        object: 'response',
        created_at: result.created_at,
        status: 'completed',
        model: body.model,
        output: result.output,
        usage: result.usage,
        store: false,
        error: null,
        incomplete_details: null,
      };
      if (body.stream !== true) return sendJson(res, 200, response);
      const writer = new SseWriter(res);
      let sequence = 0;
      const send = (type: string, fields: JsonObject) => writer.write(type, JSON.stringify({ type, sequence_number: sequence++, ...fields }));
      const started = { ...response, status: 'in_progress', output: [], usage: null };
      send('response.created', { response: started });
      send('response.in_progress', { response: started });
      result.output.forEach((item, index) => {
        send('response.output_item.added', { output_index: index, item });
        send('response.output_item.done', { output_index: index, item });
      });
      send('response.completed', { response: response as unknown as JsonObject });
      writer.end();
    });
  };
}
