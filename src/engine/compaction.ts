import { Errors, GatewayError, invalidRequest, upstreamStreamError } from '../errors.js';
import type { ModelItem, ModelRequest, ModelUsage, RawEvent } from '../protocol/model.js';
import { ID_PREFIX, type Item, type Usage } from '../protocol/responses.js';
import { isJsonObject } from '../protocol/item-validation.js';
import type { UpstreamClient } from '../upstream/client.js';
import { newId } from '../util/ids.js';
import { estimateTokens } from './token-count.js';
import type { AutoCompaction, CompactionItem, Logger, PreparedTurn } from './types.js';
import type { Cancellation } from '../util/abort.js';

export type { AutoCompaction, CompactionItem };

/**
 * Conversation compaction (`POST /v1/responses/compact`, and `context_management` auto-compaction).
 *
 * **The rule.** The most recent user message and everything after it are kept verbatim; the
 * model summarizes everything before it (instructions excluded when the caller says where they
 * are). With no user message at all, everything is summarized. The result is
 * `[compaction item, ...kept items]`: a client uses it as the next request's `input`, in place
 * of the history it replaces.
 *
 * **The `compaction` item** is `{type: "compaction", id: "cmp_…", encrypted_content}`. This
 * gateway has no key management, so `encrypted_content` is NOT encrypted: it is a versioned
 * envelope, `base64url(JSON.stringify({v: 1, summary, keep?}))`, readable by anyone who decodes
 * it. Clients must treat it as opaque (its format may change with `v`) and must not put secrets
 * in a conversation they expect to be hidden by it. Items of another origin (e.g. OpenAI's own
 * encrypted compactions) do not decode: `decodeCompaction` returns undefined for them.
 *
 * `keep` (absent = 0) is only set by auto-compaction, whose item is emitted in a response's
 * output *after* the turn's input: it counts the public items right before the compaction item
 * that the summary does not cover (the last user message and what follows it). See
 * `applyCompactions`.
 */

export const COMPACTION_ID_PREFIX = 'cmp';
export const COMPACTION_ENVELOPE_VERSION = 1;

/**
 * The summarization request: sent as a final `user` message after the conversation to be
 * summarized (the conversation itself is sent as the model already saw it, so an upstream with
 * prefix caching reuses its cache).
 */
export const COMPACTION_PROMPT = [
  'Context compaction: the conversation above is about to be replaced by a summary, so that it can continue in a smaller context window.',
  'Write that summary now. It must let an assistant that never saw the original messages continue the work seamlessly.',
  "Be dense and specific. Preserve: the user's goals, requirements and constraints; decisions made and their reasons;",
  'important facts, names, numbers, identifiers, file names and paths, URLs, commands and code that are still relevant;',
  'results of tool calls that are still needed; the current state of the work; open questions, pending tasks and next steps.',
  'Drop greetings, repetition and anything superseded. Do not answer or continue the conversation, do not call tools,',
  'and do not mention that this is a summary request: reply with the summary only, as plain text.',
].join(' ');

/** The prefix of the model message a `compaction` item turns back into. */
export const SUMMARY_MESSAGE_PREFIX = 'Summary of the earlier conversation: ';

export interface CompactionResult {
  id: string;
  object: 'response.compaction';
  created_at: number;
  output: Item[];
  usage: Usage;
}

interface Envelope {
  v: 1;
  summary: string;
  keep?: number;
  /** Id of the first item kept verbatim (auto-compaction); wins over `keep`, which counts positions. */
  anchor?: string;
  /**
   * Every item before it is kept (Codex's remote compaction: the client itself keeps only its
   * user messages in front of the compaction item, and they must stay).
   */
  keepAll?: true;
}

/** Encodes a summary as a `compaction` item's `encrypted_content` (see the module comment: not encrypted). */
export function encodeCompaction(summary: string, keep = 0, anchor?: string, keepAll = false): string {
  const envelope: Envelope = { v: COMPACTION_ENVELOPE_VERSION, summary, ...(keep > 0 ? { keep } : {}), ...(anchor ? { anchor } : {}), ...(keepAll ? { keepAll: true as const } : {}) };
  return Buffer.from(JSON.stringify(envelope), 'utf8').toString('base64url');
}

/** A new `compaction` item carrying `summary`. */
export function newCompactionItem(summary: string, keep = 0, anchor?: string, keepAll = false): CompactionItem {
  return { type: 'compaction', id: newId(COMPACTION_ID_PREFIX), encrypted_content: encodeCompaction(summary, keep, anchor, keepAll) };
}

function decodeEnvelope(item: unknown): Envelope | undefined {
  if (!isJsonObject(item)) return undefined;
  const { type, encrypted_content: content } = item;
  if (type !== 'compaction' || typeof content !== 'string' || !/^[A-Za-z0-9_-]+$/.test(content)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(content, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isJsonObject(value)) return undefined;
  const { v, summary, keep, anchor, keepAll } = value;
  if (v !== COMPACTION_ENVELOPE_VERSION || typeof summary !== 'string') return undefined;
  if (keep !== undefined && !(typeof keep === 'number' && Number.isInteger(keep) && keep >= 0)) return undefined;
  return { v, summary, ...(typeof keep === 'number' && keep > 0 ? { keep } : {}), ...(typeof anchor === 'string' && anchor ? { anchor } : {}), ...(keepAll === true ? { keepAll: true as const } : {}) };
}

/** The summary a `compaction` item produced by this gateway carries; undefined for any other item. */
export function decodeCompaction(item: unknown): string | undefined {
  return decodeEnvelope(item)?.summary;
}

/**
 * A `compaction` item as the model sees it: a developer message "Summary of the earlier
 * conversation: …" (chat upstreams merge it into the leading system message when it comes
 * first, as it does in a compacted input). Undefined when the item is not one of ours or its
 * summary is empty.
 */
export function compactionToModelItem(item: unknown): ModelItem | undefined {
  const summary = decodeCompaction(item);
  if (!summary) return undefined;
  return { type: 'message', role: 'developer', content: [{ type: 'text', text: `${SUMMARY_MESSAGE_PREFIX}${summary}` }] };
}

/**
 * The conversation a chain of public items stands for, once compacted: the latest `compaction`
 * item produced by this gateway replaces every item before it, except the `keep` items right
 * before it (auto-compaction), and moves in front of those kept items. Earlier items are
 * dropped; foreign compaction items are left in place (the caller decides what they mean).
 *
 * `[a, b, U, x, C{keep:2}, y]` → `[C, U, x, y]`; `[a, b, C, U]` (a `/compact` output fed back
 * behind old history) → `[C, U]`. Without a compaction item the list is returned as is.
 */
export function applyCompactions<T extends { readonly id?: unknown }>(items: readonly T[]): T[] {
  for (let j = items.length - 1; j >= 0; j--) {
    const envelope = decodeEnvelope(items[j]);
    if (!envelope) continue;
    let start = envelope.keepAll ? 0 : Math.max(0, j - (envelope.keep ?? 0));
    if (envelope.anchor) {
      // the kept part starts at a named item: positions shift when earlier compactions moved items
      for (let a = j - 1; a >= 0; a--) {
        if (items[a].id === envelope.anchor) {
          start = a;
          break;
        }
      }
    }
    // older summaries inside the kept part are superseded by this one
    const kept = items.slice(start, j).filter((item) => !decodeEnvelope(item));
    return [items[j], ...kept, ...items.slice(j + 1)];
  }
  return [...items];
}

const isUserMessage = (item: { type?: unknown; role?: unknown }): boolean => item.type === 'message' && item.role === 'user';

/** Index of the last user message (where the kept part starts); -1 = none (everything is summarized). */
function lastUserIndex(items: ReadonlyArray<{ type?: unknown; role?: unknown }>): number {
  for (let i = items.length - 1; i >= 0; i--) if (isUserMessage(items[i])) return i;
  return -1;
}

/**
 * The public items the compaction rule keeps verbatim: the last user message and everything
 * after it (none when there is no user message).
 */
export function keptPublicItems<T extends { type?: unknown; role?: unknown }>(items: readonly T[]): T[] {
  const at = lastUserIndex(items);
  return at === -1 ? [] : items.slice(at);
}

interface Summary {
  text: string;
  usage: Usage;
}

const ZERO_USAGE: Usage = { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 };

/** Asks the model for the summary of `context` (+ the compaction prompt); text only, no tools. */
async function summarize(upstream: UpstreamClient, model: string, context: readonly ModelItem[], signal: Cancellation): Promise<Summary> {
  const request: ModelRequest = {
    model,
    items: [...context, { type: 'message', role: 'user', content: [{ type: 'text', text: COMPACTION_PROMPT }] }],
    tools: [],
  };
  const batches: AsyncIterable<RawEvent[]> = await upstream.open(request, signal);
  let text = '';
  let usage: ModelUsage | undefined;
  let finished = false;
  for await (const batch of batches) {
    for (const event of batch) {
      switch (event.kind) {
        case 'text':
          text += event.delta;
          break;
        case 'usage':
          usage = event.usage;
          break;
        case 'finish':
          finished = true;
          break;
        case 'error':
          throw upstreamStreamError(event, 'The upstream failed mid-stream while compacting');
        default:
          // reasoning, refusals and (unrequested) tool calls are not part of the summary
          break;
      }
    }
  }
  if (!finished) throw Errors.upstreamDisconnected('The upstream stream ended before the compaction summary was complete.');
  text = text.trim();
  if (text.length === 0) throw Errors.compactionFailed();
  const inputTokens = usage?.inputTokens ?? estimateTokens(request.items);
  const outputTokens = usage?.outputTokens ?? Math.ceil(text.length / 4);
  return {
    text,
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: usage?.cachedTokens ?? 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: usage?.reasoningTokens ?? 0 },
      total_tokens: inputTokens + outputTokens,
    },
  };
}

/**
 * Compacts a conversation (`POST /v1/responses/compact`). `items` is the full conversation as
 * the model sees it (`PreparedTurn.conversation`); the model summarizes the items before the
 * last user message — the first `leading` items (the request's instructions) are sent along as
 * context but are not what is being summarized: when nothing else precedes the last user
 * message, no model call is made and the compaction item carries an empty summary.
 * `keptItems` are the public items kept verbatim (`keptPublicItems(history + input)`), which
 * must correspond to the model items from the last user message on.
 *
 * Returns `output = [compaction item, ...keptItems]`. Upstream failures are thrown as GatewayError.
 */
export async function compactConversation(
  upstream: UpstreamClient,
  params: { model: string; items: readonly ModelItem[]; keptItems: Item[]; signal: Cancellation; leading?: number; everything?: boolean },
): Promise<CompactionResult> {
  const cut = lastUserIndex(params.items);
  // `everything`: the caller keeps nothing after the compaction item (Codex's remote compaction)
  const end = cut === -1 || params.everything ? params.items.length : cut;
  const leading = Math.min(params.leading ?? 0, end);
  let summary: Summary = { text: '', usage: ZERO_USAGE };
  if (end > leading) summary = await summarize(upstream, params.model, params.items.slice(0, end), params.signal);
  return {
    id: newId(ID_PREFIX.response),
    object: 'response.compaction',
    created_at: Math.floor(Date.now() / 1000),
    output: [newCompactionItem(summary.text, 0, undefined, params.everything) as Item, ...params.keptItems],
    usage: summary.usage,
  };
}

// ---------- auto-compaction (`context_management`) ----------

/** Threshold used when `context_management: [{type: "compaction"}]` gives no `compact_threshold`. */
export const DEFAULT_COMPACT_THRESHOLD = 32_000;

export interface ContextManagement {
  /** Compact when the estimated input reaches this many tokens. */
  compactThreshold: number;
}

/**
 * Validates a create request's `context_management` (`[{type: "compaction", compact_threshold?}]`).
 * Null when absent (or an empty list); 400 (`param: context_management…`) when malformed.
 */
export function parseContextManagement(value: unknown, defaultThreshold = DEFAULT_COMPACT_THRESHOLD): ContextManagement | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalidRequest("Invalid type for 'context_management': expected an array.", 'context_management', 'invalid_type');
  let result: ContextManagement | null = null;
  value.forEach((entry: unknown, i) => {
    const param = `context_management[${i}]`;
    if (!isJsonObject(entry)) throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
    const { type, compact_threshold: threshold } = entry;
    if (type !== 'compaction') throw invalidRequest(`Invalid value for '${param}.type': only 'compaction' is supported.`, `${param}.type`, 'invalid_value');
    if (threshold !== undefined && threshold !== null && !(typeof threshold === 'number' && Number.isInteger(threshold) && threshold >= 1)) {
      throw invalidRequest(`Invalid value for '${param}.compact_threshold': expected a positive integer.`, `${param}.compact_threshold`, 'invalid_value');
    }
    result = { compactThreshold: typeof threshold === 'number' ? threshold : defaultThreshold };
  });
  return result;
}

/**
 * Auto-compaction for `context_management: [{type: "compaction", compact_threshold}]`, called by
 * `Engine.prepare` once the conversation is built. When the conversation (+ tools) is estimated
 * at ≥ `threshold` tokens, the items before the last user message (after the instructions) are
 * summarized — the same rule as `compactConversation` — and a replacement conversation is
 * returned; otherwise (or when there is nothing before the last user message to summarize)
 * undefined.
 *
 * `publicItems` are the public items the conversation was built from (history + input, after
 * `applyCompactions`): the item's `keep` is the number of them from the last user message on, so
 * that `applyCompactions` rebuilds the same conversation when this item comes back in a chain
 * (stored history or a stateless client's input) right after those items.
 *
 * Upstream failures are logged and yield undefined (the turn goes on uncompacted); an abort
 * (`signal`) is rethrown.
 */
export async function maybeCompact(
  upstream: UpstreamClient,
  turn: Pick<PreparedTurn, 'request' | 'conversation' | 'tools' | 'base'>,
  options: {
    threshold: number;
    publicItems: readonly Item[];
    signal: Cancellation;
    log?: Pick<Logger, 'warn'>;
    /** Replaces the estimate (e.g. with `countInputTokens`). */
    countTokens?: (items: readonly ModelItem[], tools: ModelRequest['tools']) => number | Promise<number>;
  },
): Promise<AutoCompaction | undefined> {
  const count = options.countTokens ?? ((items, tools) => estimateTokens(items, tools));
  const tokensBefore = await count(turn.conversation, turn.tools);
  if (tokensBefore < options.threshold) return undefined;

  const leading = turn.request.instructions ? 1 : 0;
  const cut = lastUserIndex(turn.conversation);
  const end = cut === -1 ? turn.conversation.length : cut;
  if (end <= leading) return undefined;
  // nothing new to summarize: only an earlier summary stands before the last user message
  if (end - leading === 1 && isSummaryMessage(turn.conversation[leading])) return undefined;
  const publicCut = lastUserIndex(options.publicItems);
  const keep = publicCut === -1 ? 0 : options.publicItems.length - publicCut;
  const anchor = publicCut === -1 ? undefined : (options.publicItems[publicCut].id as string | undefined);

  let summary: Summary;
  try {
    summary = await summarize(upstream, turn.base.model, turn.conversation.slice(0, end), options.signal);
  } catch (err) {
    if (options.signal.aborted) throw err;
    options.log?.warn({ err: err instanceof GatewayError ? err.message : err }, 'auto-compaction failed; continuing without it');
    return undefined;
  }
  const item = newCompactionItem(summary.text, keep, anchor);
  const conversation = [...turn.conversation.slice(0, leading), compactionToModelItem(item)!, ...turn.conversation.slice(end)];
  return { conversation, item, usage: summary.usage, tokensBefore, tokensAfter: await count(conversation, turn.tools) };
}

function isSummaryMessage(item: ModelItem | undefined): boolean {
  return item?.type === 'message' && item.role === 'developer' && item.content.length === 1 && item.content[0].type === 'text' && item.content[0].text.startsWith(SUMMARY_MESSAGE_PREFIX);
}
