import { Errors } from '../errors.js';
import { ChatStreamDecoder, encodeChatRequest, type ChatChunk, type ReasoningReplay } from '../protocol/chat.js';
import { MalformedChunkError } from '../protocol/upstream-chunks.js';
import { ChatChunkReader } from '../protocol/chat-chunk-reader.js';
import type { GrammarField, ModelRequest } from '../protocol/model.js';
import { ID_PREFIX } from '../protocol/responses.js';
import { newId } from '../util/ids.js';
import type { RawEventStream, UpstreamClient, UpstreamOptions } from './client.js';
import { chatRequestBody } from './chat-body.js';
import { UpstreamTransport } from './http.js';
import type { UpstreamExchange } from './exchange.js';
import { PROBE_FAILED, probeGrammarSupport } from './grammar-probe.js';
import { untilAborted, type Cancellation } from '../util/abort.js';

/** The chat dialect: any OpenAI-compatible `/chat/completions` server (vLLM, SGLang, llama.cpp, Ollama). */
export class ChatCompletionsUpstream implements UpstreamClient {
  /** The HTTP side, shared with pass-through routes and readiness probes. */
  readonly transport: UpstreamTransport;

  constructor(options: UpstreamOptions, private readonly reasoningReplay: ReasoningReplay = 'none') {
    this.transport = new UpstreamTransport(options);
  }

  /** The grammar probe's answer, asked once (the first time a request needs it). */
  private grammarProbe: ReturnType<typeof probeGrammarSupport> | undefined;

  open(request: ModelRequest, signal: Cancellation): Promise<RawEventStream> {
    // a grammar goes out only in the field this server honours, never to one that would ignore it;
    // the usual round posts at once (no async layer of its own on the way)
    if (request.grammar) return this.grammarSupport(request.model, signal).then((field) => this.post(request, field, signal));
    return this.post(request, undefined, signal);
  }

  private post(request: ModelRequest, grammarField: GrammarField | undefined, signal: Cancellation): Promise<RawEventStream> {
    let body: string | Buffer[];
    try {
      body = chatRequestBody(encodeChatRequest(request, this.reasoningReplay, grammarField));
    } catch (err) {
      return Promise.reject(err);
    }
    return this.transport.post('/chat/completions', body, signal).then((response) => this.events(response, request.model, signal));
  }

  /** The accepted exchange's chunks, read (`ChatChunkReader`, with the templates of `model`'s streams) and decoded into raw events as they come. */
  private events(response: UpstreamExchange, model: string, signal: Cancellation): RawEventStream {
    const decoder = new ChatStreamDecoder(() => newId(ID_PREFIX.call));
    const reader = new ChatChunkReader(model);
    return this.transport.events(
      response,
      (data, out) => {
        if (data === '[DONE]') return;
        let chunk: ChatChunk;
        try {
          chunk = reader.read(data);
        } catch (err) {
          throw Errors.upstreamInvalidResponse(`The upstream sent an invalid chunk${err instanceof MalformedChunkError ? ` (${err.message})` : ''}: ${data.slice(0, 200)}`);
        }
        decoder.push(chunk, out);
      },
      signal,
    );
  }

  grammarSupport(model: string, signal: Cancellation): Promise<GrammarField | undefined> {
    let probe = this.grammarProbe;
    if (!probe) {
      probe = this.grammarProbe = probeGrammarSupport(this.transport, model);
      // a probe that could not reach the server is asked again next time
      void probe.then((field) => {
        if (field === PROBE_FAILED) this.grammarProbe = undefined;
      });
    }
    // the shared probe itself keeps running for the other requests waiting on it
    return untilAborted(probe.then((field) => (field === PROBE_FAILED ? undefined : field)), signal);
  }

  listModels(signal: AbortSignal): Promise<unknown> {
    return this.transport.getJson('/models', signal);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
