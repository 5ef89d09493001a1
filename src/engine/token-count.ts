import { request } from 'undici';
import { encodeChatMessages, type ReasoningReplay } from '../protocol/chat.js';
import type { ModelFunction, ModelItem } from '../protocol/model.js';

/**
 * Input token counts (`POST /v1/responses/input_tokens`, the auto-compaction threshold).
 *
 * Exact counts need the model's tokenizer and chat template, which only the inference server
 * has: vLLM serves `POST /tokenize` for that. Everything else (other servers, a slow or failing
 * vLLM) gets a deliberately simple, documented heuristic.
 */

/** Characters (UTF-16 code units) per token: the usual rule of thumb for English text and code. */
export const CHARS_PER_TOKEN = 4;
/** Per-item overhead: role / turn markers of the chat template. */
export const TOKENS_PER_ITEM = 4;
/** One image part (OpenAI's low-detail base cost; real costs depend on the model and size). */
export const TOKENS_PER_IMAGE = 85;
/** How long `countInputTokens` waits for the upstream's `/tokenize` before estimating. */
export const TOKENIZE_TIMEOUT_MS = 2_000;

/**
 * ASCII text at `CHARS_PER_TOKEN` characters a token; anything else (CJK, emoji, accented
 * scripts) at one token per character, which tokenizers come close to — counting it at 4 would
 * let a compaction threshold fire far too late.
 */
const textTokens = (text: string): number => {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x80) ascii++;
  return Math.ceil(ascii / CHARS_PER_TOKEN) + (text.length - ascii);
};

/**
 * Estimated input tokens of a conversation, without a tokenizer. The heuristic:
 *
 * - every item (message, reasoning, function call, function call output) costs `TOKENS_PER_ITEM` (4);
 * - plus `ceil(ascii chars / 4)` + one per non-ASCII character for each text it carries: each text part of a message, the reasoning
 *   text, a call's name and (separately) its arguments, an output's text;
 * - plus `TOKENS_PER_IMAGE` (85) per image part;
 * - `instructions`, when given separately, count as one more message (4 + ceil(chars / 4));
 * - tools: `ceil(JSON.stringify(tools).length / 4)` once, when there are any.
 *
 * Example: one user message "Hello, world!" (13 chars) → 4 + ceil(13 / 4) = 8.
 * Reasoning items are counted even though a chat upstream may not be sent them (an over-estimate
 * is the safe side for a compaction threshold).
 */
export function estimateTokens(items: readonly ModelItem[], tools?: readonly ModelFunction[], instructions?: string): number {
  let total = 0;
  if (instructions) total += TOKENS_PER_ITEM + textTokens(instructions);
  for (const item of items) {
    total += TOKENS_PER_ITEM;
    switch (item.type) {
      case 'message':
        for (const part of item.content) total += part.type === 'text' ? textTokens(part.text) : TOKENS_PER_IMAGE;
        break;
      case 'reasoning':
        total += textTokens(item.text);
        break;
      case 'function_call':
        total += textTokens(item.name) + textTokens(item.arguments);
        break;
      case 'function_call_output':
        total += textTokens(item.output);
        break;
    }
  }
  if (tools && tools.length > 0) total += textTokens(JSON.stringify(tools));
  return total;
}

export interface InputTokenCount {
  tokens: number;
  /** `upstream`: the inference server's tokenizer (vLLM `/tokenize`); `estimate`: `estimateTokens`. */
  method: 'upstream' | 'estimate';
  /** The model's context length, when the upstream reported it (vLLM `max_model_len`). */
  maxModelLen?: number;
}

export interface CountOptions {
  /** Default `TOKENIZE_TIMEOUT_MS` (2 s). */
  timeoutMs?: number;
  /** Sent as `authorization: Bearer …` (vLLM only guards `/v1/*`, but other servers may guard more). */
  apiKey?: string;
  /** How reasoning items are replayed to a chat upstream (config `upstream.reasoningReplay`). */
  reasoningReplay?: ReasoningReplay;
}

/**
 * vLLM's tokenize endpoint for an OpenAI base URL. vLLM serves `/tokenize` at the server root,
 * not under `/v1`: `http://h:8000/v1` → `http://h:8000/tokenize` (a path prefix before `/v1`,
 * e.g. behind a reverse proxy, is kept).
 */
export function tokenizeUrl(upstreamBaseUrl: string): string {
  const url = new URL(upstreamBaseUrl);
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  url.pathname = `${path}/tokenize`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

/**
 * Counts the input tokens of a conversation: asks the upstream's vLLM `POST /tokenize`
 * (`{model, messages, tools?, add_generation_prompt: true}` → `{count, max_model_len, tokens}`,
 * the chat template applied exactly as for generation), and falls back to `estimateTokens` on
 * any failure — a 404 (not vLLM), another status, a malformed answer, a network error, or no
 * answer within `timeoutMs`. Never throws; `signal` (the client going away) also just ends the
 * wait.
 */
export async function countInputTokens(
  upstreamBaseUrl: string,
  model: string,
  items: readonly ModelItem[],
  tools: readonly ModelFunction[],
  signal: AbortSignal,
  options: CountOptions = {},
): Promise<InputTokenCount> {
  const estimate = (): InputTokenCount => ({ tokens: estimateTokens(items, tools), method: 'estimate' });
  if (signal.aborted) return estimate();
  const timeoutMs = options.timeoutMs ?? TOKENIZE_TIMEOUT_MS;
  const body: Record<string, unknown> = {
    model,
    messages: encodeChatMessages(items, options.reasoningReplay ?? 'none'),
    add_generation_prompt: true,
  };
  if (tools.length > 0) body.tools = tools.map((fn) => ({ type: 'function', function: fn }));
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  try {
    const response = await request(tokenizeUrl(upstreamBaseUrl), {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      return estimate();
    }
    const answer = (await response.body.json()) as { count?: unknown; max_model_len?: unknown } | null;
    const count = answer?.count;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) return estimate();
    const maxModelLen = answer?.max_model_len;
    return { tokens: count, method: 'upstream', ...(typeof maxModelLen === 'number' && maxModelLen > 0 ? { maxModelLen } : {}) };
  } catch {
    return estimate();
  }
}
