/**
 * The Responses dialect as an *upstream* (vLLM's own `/v1/responses`, function tools only):
 * encoding a neutral model request and decoding its event stream into raw events.
 * vLLM quirks handled: non-standard events are dropped; `incomplete` is recognised even when it
 * arrives inside `response.completed`. Reference: chat-completions-upstream.md §6.
 */
import type { FinishReason, ModelItem, ModelRequest, RawEvent } from './model.js';
import type { UpstreamResponsesEvent } from './upstream-chunks.js';

export function encodeResponsesRequest(req: ModelRequest): Record<string, unknown> {
  const instructions: string[] = [];
  const input: Record<string, unknown>[] = [];
  let leading = true;
  for (const item of req.items) {
    if (leading && item.type === 'message' && (item.role === 'system' || item.role === 'developer')) {
      instructions.push(item.content.map((p) => (p.type === 'text' ? p.text : '')).join(''));
      continue;
    }
    leading = false;
    const encoded = encodeItem(item);
    if (encoded) input.push(encoded);
  }
  const body: Record<string, unknown> = { model: req.model, input, stream: true, store: false };
  if (instructions.length > 0) body.instructions = instructions.join('\n\n');
  if (req.tools.length > 0) {
    body.tools = req.tools.map((fn) => ({ type: 'function', name: fn.name, description: fn.description ?? null, parameters: fn.parameters ?? null, strict: fn.strict ?? false }));
    if (req.toolChoice !== undefined) body.tool_choice = typeof req.toolChoice === 'string' ? req.toolChoice : { type: 'function', name: req.toolChoice.name };
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  if (req.maxOutputTokens !== undefined) body.max_output_tokens = req.maxOutputTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.reasoningEffort !== undefined) body.reasoning = { effort: req.reasoningEffort };
  if (req.responseFormat !== undefined) body.text = { format: req.responseFormat };
  return body;
}

function encodeItem(item: ModelItem): Record<string, unknown> | null {
  switch (item.type) {
    case 'message': {
      const textType = item.role === 'assistant' ? 'output_text' : 'input_text';
      return {
        type: 'message',
        role: item.role,
        content: item.content.map((p) => (p.type === 'text' ? { type: textType, text: p.text } : { type: 'input_image', image_url: p.url, detail: p.detail ?? 'auto' })),
      };
    }
    case 'function_call':
      return { type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments };
    case 'function_call_output':
      return { type: 'function_call_output', call_id: item.callId, output: item.output };
    case 'reasoning':
      // vLLM replays only assistant text; reasoning items from other servers are not portable
      return null;
  }
}

/** Decodes parsed Responses stream events into raw events. */
export class ResponsesStreamDecoder {
  private readonly callIndex = new Map<number, number>();
  private sawCall = false;

  constructor(private readonly newCallId: () => string) {}

  push(event: UpstreamResponsesEvent, out: RawEvent[]): void {
    switch (event.type) {
      case 'response.output_text.delta':
        if (event.delta) out.push({ kind: 'text', delta: event.delta });
        break;
      case 'response.refusal.delta':
        if (event.delta) out.push({ kind: 'refusal', delta: event.delta });
        break;
      case 'response.reasoning_text.delta':
      case 'response.reasoning.delta':
        if (event.delta) out.push({ kind: 'reasoning', delta: event.delta });
        break;
      case 'response.output_item.added': {
        const item = event.item;
        if (item?.type !== 'function_call') break;
        const index = this.callIndex.size;
        this.callIndex.set(event.output_index ?? index, index);
        this.sawCall = true;
        out.push({ kind: 'tool_call_start', index, callId: item.call_id || this.newCallId(), name: item.name ?? '' });
        if (item.arguments) out.push({ kind: 'tool_call_args', index, delta: item.arguments });
        break;
      }
      case 'response.function_call_arguments.delta': {
        const index = event.output_index === undefined ? undefined : this.callIndex.get(event.output_index);
        if (index !== undefined && event.delta) out.push({ kind: 'tool_call_args', index, delta: event.delta });
        break;
      }
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed': {
        const response = event.response ?? {};
        const usage = response.usage;
        if (usage) {
          out.push({
            kind: 'usage',
            usage: {
              inputTokens: usage.input_tokens ?? 0,
              outputTokens: usage.output_tokens ?? 0,
              cachedTokens: usage.input_tokens_details?.cached_tokens ?? 0,
              reasoningTokens: usage.output_tokens_details?.reasoning_tokens ?? 0,
            },
          });
        }
        if (response.status === 'failed' || event.type === 'response.failed') {
          out.push({ kind: 'error', message: response.error?.message ?? 'upstream response failed', code: response.error?.code });
        } else {
          out.push({ kind: 'finish', reason: this.finishReason(response) });
        }
        break;
      }
      case 'error':
        out.push({ kind: 'error', message: event.message ?? event.error?.message ?? 'upstream error', code: typeof event.code === 'string' ? event.code : undefined });
        break;
      default:
        // everything else (lifecycle, done events, vLLM's response.reasoning_part.*) carries nothing new
        break;
    }
  }

  private finishReason(response: NonNullable<UpstreamResponsesEvent['response']>): FinishReason {
    if (response.status === 'incomplete') {
      return response.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length';
    }
    return this.sawCall ? 'tool_calls' : 'stop';
  }
}
