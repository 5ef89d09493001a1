// Encodes a RoundPlan as vLLM's own `/v1/responses` output, quirks included
// (/work/docs/reference/chat-completions-upstream.md §6):
// - item ids are bare UUIDs (vLLM's `random_uuid()`, 32 hex), `call_id` is `call_<uuid>`;
// - reasoning is framed by the non-standard `response.reasoning_part.added/.done` events
//   (instead of `content_part.*`);
// - the stream always ends with `response.completed`, even when `response.status` is
//   `incomplete` (finish_reason length → `incomplete_details.reason: "max_output_tokens"`).
// Pure apart from id minting.

import { hex32 } from './chat-stream.js';
import type { RoundPlan } from './script-types.js';

export interface ResponsesEncodeContext {
  id: string;
  createdAt: number;
  model: string;
  /** The request body, for the echoed parameters. */
  request: Record<string, any>;
}

export function newResponseId(): string {
  return `resp_${hex32()}`;
}

export function responsesUsage(plan: RoundPlan): object {
  const u = plan.usage;
  return {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens },
  };
}

/** The error event vLLM emits when generation fails after the stream opened. */
export function responsesErrorEvent(sequenceNumber: number): object {
  return {
    type: 'error',
    code: 'InternalServerError',
    message: 'simulated mid-stream error',
    param: null,
    sequence_number: sequenceNumber,
  };
}

interface Item {
  id: string;
  kind: 'reasoning' | 'message' | 'function_call';
  done: Record<string, unknown>;
  added: Record<string, unknown>;
  pieces: string[];
  name?: string;
  partType?: 'output_text' | 'refusal';
}

function planItems(plan: RoundPlan): Item[] {
  const items: Item[] = [];
  if (plan.reasoning.length > 0) {
    const id = hex32();
    const text = plan.reasoning.join('');
    items.push({
      id,
      kind: 'reasoning',
      pieces: plan.reasoning,
      added: { id, type: 'reasoning', summary: [], status: 'in_progress' },
      done: { id, type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text }], status: 'completed' },
    });
  }
  const isRefusal = plan.text.length === 0 && plan.refusal.length > 0;
  if (plan.text.length > 0 || isRefusal || (plan.toolCalls.length === 0 && plan.reasoning.length === 0)) {
    const id = hex32();
    const pieces = isRefusal ? plan.refusal : plan.text;
    const joined = pieces.join('');
    const part = isRefusal ? { type: 'refusal', refusal: joined } : { type: 'output_text', text: joined, annotations: [] };
    items.push({
      id,
      kind: 'message',
      pieces,
      partType: isRefusal ? 'refusal' : 'output_text',
      added: { id, type: 'message', role: 'assistant', content: [], status: 'in_progress' },
      done: { id, type: 'message', role: 'assistant', content: [part], status: 'completed' },
    });
  }
  for (const c of plan.toolCalls) {
    const id = hex32();
    const callId = c.id ?? `call_${hex32()}`;
    const base = { id, type: 'function_call', call_id: callId, name: c.name };
    items.push({
      id,
      kind: 'function_call',
      pieces: c.pieces,
      name: c.name,
      added: { ...base, arguments: '', status: 'in_progress' },
      done: { ...base, arguments: c.arguments, status: 'completed' },
    });
  }
  return items;
}

function responseObject(
  plan: RoundPlan,
  ctx: ResponsesEncodeContext,
  status: string,
  output: object[],
  final: boolean,
): Record<string, unknown> {
  const r = ctx.request;
  let incomplete: object | null = null;
  if (final && plan.finishReason === 'length') incomplete = { reason: 'max_output_tokens' };
  if (final && plan.finishReason === 'content_filter') incomplete = { reason: 'content_filter' };
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: incomplete,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    max_tool_calls: r.max_tool_calls ?? null,
    metadata: r.metadata ?? null,
    model: ctx.model,
    output,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    reasoning: r.reasoning ?? null,
    service_tier: r.service_tier ?? 'auto',
    store: false, // vLLM forces store off unless VLLM_ENABLE_RESPONSES_API_STORE=1
    temperature: r.temperature ?? 1.0,
    text: r.text ?? { format: { type: 'text' } },
    tool_choice: r.tool_choice ?? 'auto',
    tools: Array.isArray(r.tools) ? r.tools : [],
    top_logprobs: r.top_logprobs ?? null,
    top_p: r.top_p ?? 1.0,
    truncation: r.truncation ?? 'disabled',
    usage: final ? responsesUsage(plan) : null,
    user: r.user ?? null,
  };
}

function finalStatus(plan: RoundPlan): string {
  return plan.finishReason === 'length' || plan.finishReason === 'content_filter' ? 'incomplete' : 'completed';
}

/** The non-stream Response object. */
export function buildResponse(plan: RoundPlan, ctx: ResponsesEncodeContext): object {
  return responseObject(plan, ctx, finalStatus(plan), planItems(plan).map((i) => i.done), true);
}

/** Every event of a streamed round, with `sequence_number` from 0. */
export function buildResponsesEvents(plan: RoundPlan, ctx: ResponsesEncodeContext): object[] {
  const events: Record<string, unknown>[] = [];
  const push = (e: Record<string, unknown>) => {
    e.sequence_number = events.length;
    events.push(e);
  };
  const items = planItems(plan);
  push({ type: 'response.created', response: responseObject(plan, ctx, 'in_progress', [], false) });
  push({ type: 'response.in_progress', response: responseObject(plan, ctx, 'in_progress', [], false) });

  items.forEach((item, output_index) => {
    const item_id = item.id;
    push({ type: 'response.output_item.added', output_index, item: item.added });
    if (item.kind === 'reasoning') {
      const text = item.pieces.join('');
      const at = { item_id, output_index, content_index: 0 };
      push({ type: 'response.reasoning_part.added', ...at, part: { type: 'reasoning_text', text: '' } });
      for (const delta of item.pieces) push({ type: 'response.reasoning_text.delta', ...at, delta });
      push({ type: 'response.reasoning_text.done', ...at, text });
      push({ type: 'response.reasoning_part.done', ...at, part: { type: 'reasoning_text', text } });
    } else if (item.kind === 'message') {
      const text = item.pieces.join('');
      const at = { item_id, output_index, content_index: 0 };
      if (item.partType === 'refusal') {
        push({ type: 'response.content_part.added', ...at, part: { type: 'refusal', refusal: '' } });
        for (const delta of item.pieces) push({ type: 'response.refusal.delta', ...at, delta });
        push({ type: 'response.refusal.done', ...at, refusal: text });
        push({ type: 'response.content_part.done', ...at, part: { type: 'refusal', refusal: text } });
      } else {
        push({
          type: 'response.content_part.added',
          ...at,
          part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
        });
        for (const delta of item.pieces) push({ type: 'response.output_text.delta', ...at, delta, logprobs: [] });
        push({ type: 'response.output_text.done', ...at, text, logprobs: [] });
        push({ type: 'response.content_part.done', ...at, part: { type: 'output_text', text, annotations: [] } });
      }
    } else {
      const at = { item_id, output_index };
      for (const delta of item.pieces) push({ type: 'response.function_call_arguments.delta', ...at, delta });
      push({ type: 'response.function_call_arguments.done', ...at, arguments: item.done.arguments, name: item.name });
    }
    push({ type: 'response.output_item.done', output_index, item: item.done });
  });

  // vLLM quirk: always `response.completed`, even for an incomplete response.
  push({
    type: 'response.completed',
    response: responseObject(plan, ctx, finalStatus(plan), items.map((i) => i.done), true),
  });
  return events;
}
