import { Errors } from '../errors.js';
import { ChatStreamDecoder, encodeChatRequest, type ChatChunk, type ReasoningReplay } from '../protocol/chat.js';
import type { ModelRequest, RawEvent } from '../protocol/model.js';
import { ID_PREFIX } from '../protocol/responses.js';
import { newId } from '../util/ids.js';
import type { UpstreamClient, UpstreamOptions } from './client.js';
import { UpstreamTransport } from './http.js';

/** The chat dialect: any OpenAI-compatible `/chat/completions` server (vLLM, SGLang, llama.cpp, Ollama). */
export class ChatCompletionsUpstream implements UpstreamClient {
  /** The HTTP side, shared with pass-through routes and readiness probes. */
  readonly transport: UpstreamTransport;

  constructor(options: UpstreamOptions, private readonly reasoningReplay: ReasoningReplay = 'none') {
    this.transport = new UpstreamTransport(options);
  }

  async open(request: ModelRequest, signal: AbortSignal): Promise<AsyncIterable<RawEvent[]>> {
    const response = await this.transport.post('/chat/completions', JSON.stringify(encodeChatRequest(request, this.reasoningReplay)), signal);
    const decoder = new ChatStreamDecoder(() => newId(ID_PREFIX.call));
    return this.transport.events(
      response,
      (data, out) => {
        if (data === '[DONE]') return;
        let chunk: ChatChunk;
        try {
          chunk = JSON.parse(data) as ChatChunk;
        } catch {
          throw Errors.upstreamInvalidResponse(`The upstream sent an invalid chunk: ${data.slice(0, 200)}`);
        }
        decoder.push(chunk, out);
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
