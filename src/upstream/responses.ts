import { Errors } from '../errors.js';
import type { ModelRequest } from '../protocol/model.js';
import { ID_PREFIX } from '../protocol/responses.js';
import { ResponsesStreamDecoder, encodeResponsesRequest } from '../protocol/responses-upstream.js';
import { checkResponsesEvent, MalformedChunkError, type UpstreamResponsesEvent } from '../protocol/upstream-chunks.js';
import { newId } from '../util/ids.js';
import type { RawEventStream, UpstreamClient, UpstreamOptions } from './client.js';
import { UpstreamTransport } from './http.js';
import type { Cancellation } from '../util/abort.js';

/** The responses dialect: vLLM's own `/v1/responses`, used for plain function calling only. */
export class ResponsesUpstream implements UpstreamClient {
  /** The HTTP side, shared with pass-through routes and readiness probes. */
  readonly transport: UpstreamTransport;

  constructor(options: UpstreamOptions) {
    this.transport = new UpstreamTransport(options);
  }

  async open(request: ModelRequest, signal: Cancellation): Promise<RawEventStream> {
    const response = await this.transport.post('/responses', JSON.stringify(encodeResponsesRequest(request)), signal);
    const decoder = new ResponsesStreamDecoder(() => newId(ID_PREFIX.call));
    return this.transport.events(
      response,
      (data, out) => {
        if (data === '[DONE]') return;
        let event: UpstreamResponsesEvent;
        try {
          event = checkResponsesEvent(JSON.parse(data));
        } catch (err) {
          throw Errors.upstreamInvalidResponse(`The upstream sent an invalid event${err instanceof MalformedChunkError ? ` (${err.message})` : ''}: ${data.slice(0, 200)}`);
        }
        decoder.push(event, out);
      },
      signal,
    );
  }

  listModels(signal: AbortSignal): Promise<unknown> {
    return this.transport.getJson('/models', signal);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
