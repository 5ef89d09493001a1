// Encodes a RoundPlan as vLLM's Chat Completions output: the stream chunks (as objects, one per
// `data:` line) and the non-stream `chat.completion` object. Pure apart from id minting.
// Shapes follow /work/docs/reference/chat-completions-upstream.md §3–5: first chunk
// `{role:"assistant", content:""}`, no `usage` key on regular chunks, tool call id/type/name
// only on a call's first fragment, the last argument fragment flushed in the finish chunk,
// and the usage chunk (`choices: []`) only with `stream_options.include_usage`.

import { randomUUID } from 'node:crypto';
import type { PlannedToolCall, RoundPlan } from './script-types.js';

export interface ChatEncodeContext {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

/** `chatcmpl-<32 hex>` (vLLM: `chatcmpl-{uuid4().hex}`). */
export function newChatCompletionId(): string {
  return `chatcmpl-${hex32()}`;
}

/** `chatcmpl-tool-<32 hex>`, vLLM's default tool call id. */
export function newToolCallId(): string {
  return `chatcmpl-tool-${hex32()}`;
}

export function hex32(): string {
  return randomUUID().replace(/-/g, '');
}

/** vLLM error body: `code` is the HTTP status integer. */
export function errorBody(status: number, message: string, type: string): object {
  return { error: { message, type, param: null, code: status } };
}

/** The mid-stream error vLLM writes as a `data:` line before `[DONE]`. */
export const MID_STREAM_ERROR = {
  error: { message: 'simulated mid-stream error', type: 'InternalServerError', code: 500 },
};

export function chatUsage(plan: RoundPlan): Record<string, unknown> {
  const u = plan.usage;
  const usage: Record<string, unknown> = {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
  };
  if (plan.reasoning.length > 0 || u.reasoning_tokens > 0) {
    usage.completion_tokens_details = { reasoning_tokens: u.reasoning_tokens };
  }
  return usage;
}

type Delta = Record<string, unknown>;

function header(call: PlannedToolCall, index: number, id: string, args: string): Delta {
  return { index, id, type: 'function', function: { name: call.name, arguments: args } };
}

/**
 * The deltas of a round, in order, without the role chunk and the finish chunk. Returns the
 * delta to flush into the finish chunk separately (vLLM style only).
 */
function contentDeltas(plan: RoundPlan, ids: string[]): { deltas: Delta[]; finishDelta: Delta } {
  const deltas: Delta[] = [];
  const field = plan.reasoningField;
  for (const r of plan.reasoning) deltas.push({ [field]: r });
  for (const t of plan.text) deltas.push({ content: t });
  for (const r of plan.refusal) deltas.push({ refusal: r });
  const calls = plan.toolCalls;
  let finishDelta: Delta = {};
  if (calls.length === 0) return { deltas, finishDelta };

  switch (plan.toolCallStyle) {
    case 'whole':
      deltas.push({ tool_calls: calls.map((c, i) => header(c, i, ids[i]!, c.arguments)) });
      break;
    case 'interleaved': {
      for (let i = 0; i < calls.length; i++) deltas.push({ tool_calls: [header(calls[i]!, i, ids[i]!, '')] });
      const rounds = Math.max(...calls.map((c) => c.pieces.length));
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < calls.length; i++) {
          const piece = calls[i]!.pieces[r];
          if (piece !== undefined) deltas.push({ tool_calls: [{ index: i, function: { arguments: piece } }] });
        }
      }
      break;
    }
    default: {
      for (let i = 0; i < calls.length; i++) {
        const c = calls[i]!;
        deltas.push({ tool_calls: [header(c, i, ids[i]!, '')] });
        for (const piece of c.pieces) deltas.push({ tool_calls: [{ index: i, function: { arguments: piece } }] });
      }
      // vLLM flushes the not-yet-streamed argument text in the chunk carrying finish_reason.
      const last = calls[calls.length - 1]!;
      if (last.pieces.length > 0) finishDelta = deltas.pop()!;
    }
  }
  return { deltas, finishDelta };
}

/** Every chunk of a streamed round (the `data: [DONE]` terminator is the writer's job). */
export function buildChatChunks(plan: RoundPlan, ctx: ChatEncodeContext): object[] {
  const ids = plan.toolCalls.map((c) => c.id ?? newToolCallId());
  const { deltas, finishDelta } = contentDeltas(plan, ids);
  const { id, created, model } = ctx;
  const chunk = (delta: Delta, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    // vLLM names the matched stop string on the finishing chunk
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...(finish !== null ? { stop_reason: plan.stopReason } : {}) }],
  });

  const chunks: object[] = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < deltas.length; i++) {
    chunks.push(chunk(deltas[i]!, null));
    if (plan.emptyDeltas && i < deltas.length - 1) {
      chunks.push(chunk({}, null));
      chunks.push(chunk({ content: '' }, null));
    }
  }
  chunks.push(chunk(finishDelta, plan.finishReason));
  if (ctx.includeUsage) chunks.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: chatUsage(plan) });
  return chunks;
}

/** The non-stream `chat.completion` object (always with usage). */
export function buildChatCompletion(plan: RoundPlan, ctx: ChatEncodeContext): object {
  const text = plan.text.join('');
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: plan.text.length === 0 && plan.toolCalls.length > 0 ? null : text,
    refusal: plan.refusal.length > 0 ? plan.refusal.join('') : null,
  };
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((c) => ({
      id: c.id ?? newToolCallId(),
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  if (plan.reasoning.length > 0) message[plan.reasoningField] = plan.reasoning.join('');
  return {
    id: ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason, stop_reason: plan.stopReason }],
    usage: chatUsage(plan),
  };
}
