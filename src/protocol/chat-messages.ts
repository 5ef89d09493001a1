/**
 * Model items → Chat Completions `messages` (the request side of the chat dialect,
 * `protocol/chat.ts`), with the shared history of a long conversation encoded once.
 */
import type { ModelItem, ModelPart } from './model.js';

export interface ChatToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string }
  | { role: 'user'; content: string | Array<{ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } }> }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; reasoning?: string; reasoning_content?: string }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Where an assistant message carries the reasoning that came before it, if anywhere (`upstream.reasoningReplay`). */
export type ReasoningReplay = 'none' | 'reasoning' | 'reasoning_content';

/** Text parts joined with newlines, as vLLM flattens list content for string-format templates. */
function textOf(parts: ReadonlyArray<{ type: string; text?: string }>): string {
  let out = '';
  for (const part of parts) {
    if (part.type !== 'text') continue;
    out = out.length === 0 ? part.text! : `${out}\n${part.text}`;
  }
  return out;
}

/**
 * Items → messages. Leading system/developer text is merged into one system message (many chat
 * templates accept only one); consecutive calls of one assistant turn become one assistant
 * message with `tool_calls`, each output a `tool` message paired by `call_id`.
 *
 * A conversation's shared history (the frozen items the engine hands every turn, see `shared`)
 * is encoded once: its messages are kept by the history's last item (`historyMessages`), so a
 * turn continued from a long `previous_response_id` chain encodes only what is new (issue 16).
 */
export function encodeChatMessages(items: readonly ModelItem[], reasoningReplay: ReasoningReplay): ChatMessage[] {
  // the shared history: a run of frozen items, after what the turn puts first (its instructions)
  let start = 0;
  while (start < items.length && !Object.isFrozen(items[start])) start++;
  // the run kept last from this first item is compared, not looked at again (it was all frozen)
  let end = start < items.length ? start + sameRunLength(items, start, keptFromFirst.get(items[start])?.items) : start;
  while (end < items.length && Object.isFrozen(items[end])) end++;
  // the kept part ends where a message of its own starts: a turn that answers the last turn's
  // calls (an agent's every turn) keeps what came before those calls, as its results are ordered
  // with them
  const sharedEnd = end;
  while (end > start && sharedEnd - end < MAX_PREFIX_LOOKBACK && !startsAfresh(items, end)) end--;
  if (end - start >= MIN_KEPT_PREFIX && (start === 0 || startsAfresh(items, start)) && startsAfresh(items, end)) {
    // what comes before may leave leading system text open (the history's first message closes
    // it, alone or not), never a reasoning item waiting for an assistant message
    const before = start > 0 ? encodeRun(items.slice(0, start), reasoningReplay) : undefined;
    const history = before === undefined || !before.reasoningPending ? historyMessages(items, start, end, reasoningReplay) : undefined;
    if (history !== undefined) {
      const after = end < items.length ? encodeRun(items.slice(end), reasoningReplay).messages : [];
      return before === undefined ? history.concat(after) : before.messages.concat(history, after);
    }
  }
  return encodeRun(items, reasoningReplay).messages;
}

/** Below this many shared items, encoding them again is cheaper than keeping their messages. */
const MIN_KEPT_PREFIX = 16;
/** How far back from the shared history's end a kept prefix is looked for (the items of a few turns). */
const MAX_PREFIX_LOOKBACK = 64;

/** The messages of a run of shared items, by the run's last item (one per line of conversation). */
interface KeptHistory {
  items: readonly ModelItem[];
  replay: ReasoningReplay;
  messages: readonly ChatMessage[];
}
const keptHistories = new WeakMap<ModelItem, KeptHistory>();
/** The run kept last by its first item: how far a request's shared items go is found by comparing. */
const keptFromFirst = new WeakMap<ModelItem, KeptHistory>();

/**
 * How many of `run` the items at `start` begin with (the same objects): how far a kept run of
 * shared history still holds, found by comparing references (the transport's kept bytes too).
 */
export function sameRunLength<T>(items: readonly T[], start: number, run: readonly T[] | undefined): number {
  if (run === undefined) return 0;
  const limit = Math.min(items.length - start, run.length);
  let same = 0;
  while (same < limit && items[start + same] === run[same]) same++;
  return same;
}

/**
 * Whether the messages of the items before `items[at]` are the same whatever follows: a user or
 * assistant message starts a message of its own, joins nothing before it and, unlike a system
 * message, is never merged with leading system text; so does the model's next turn right after
 * a tool result or the user's message — a call, or thoughts and then a call or an assistant
 * message (an agent's loop: the results before it are complete; a resent history's every turn:
 * the user asked, the model calls). Any other call (which joins the assistant message before it)
 * or tool result (ordered with the results before it) does not.
 */
function startsAfresh(items: readonly ModelItem[], at: number): boolean {
  const next = items[at];
  if (next === undefined) return true;
  if (next.type === 'message') return next.role === 'user' || next.role === 'assistant';
  const before = items[at - 1];
  if (before?.type !== 'function_call_output' && !(before?.type === 'message' && before.role === 'user')) return false;
  let turn = at;
  while (items[turn]?.type === 'reasoning') turn++;
  const opened = items[turn];
  return opened !== undefined && (opened.type === 'function_call' || (opened.type === 'message' && opened.role === 'assistant'));
}

/**
 * The messages of the shared items `items[start, end)`, from a kept run when there is one: the
 * same run (another turn continued from the same response), or a shorter one extended by the
 * items after it (the next turn of the same conversation), which then replaces it. Undefined when
 * the items do not end cleanly (a reasoning item waiting for its assistant message, system text
 * still open): the caller encodes everything.
 */
function historyMessages(items: readonly ModelItem[], start: number, end: number, replay: ReasoningReplay): readonly ChatMessage[] | undefined {
  for (let last = end - 1; last >= Math.max(start, end - 1 - MAX_PREFIX_LOOKBACK); last--) {
    const kept = keptHistories.get(items[last]);
    if (kept === undefined || kept.replay !== replay || kept.items.length !== last + 1 - start || !sameItems(items, start, kept.items)) continue;
    if (last === end - 1) return kept.messages;
    if (!startsAfresh(items, last + 1)) break;
    const rest = encodeRun(items.slice(last + 1, end), replay);
    if (!rest.clean) return undefined;
    keptHistories.delete(items[last]);
    return keep(items, start, end, replay, kept.messages.concat(rest.messages));
  }
  const run = encodeRun(items.slice(start, end), replay);
  return run.clean ? keep(items, start, end, replay, run.messages) : undefined;
}

function keep(items: readonly ModelItem[], start: number, end: number, replay: ReasoningReplay, messages: ChatMessage[]): readonly ChatMessage[] {
  // its messages are frozen, the list is not: V8 copies and walks a frozen array element by element
  // (`concat` 11 ×, `slice` 90 × slower over a long history: bench/frozen-arrays.mjs)
  const kept = { items: items.slice(start, end), replay, messages };
  keptHistories.set(items[end - 1], kept);
  keptFromFirst.set(items[start], kept);
  return messages;
}

function sameItems(items: readonly ModelItem[], start: number, run: readonly ModelItem[]): boolean {
  for (let i = run.length - 1; i >= 0; i--) if (items[start + i] !== run[i]) return false;
  return true;
}

/**
 * The encoding itself. `clean`: nothing at the end waits for what may follow (see
 * `historyMessages`); `reasoningPending`: a reasoning item waits for an assistant message.
 */
function encodeRun(items: readonly ModelItem[], reasoningReplay: ReasoningReplay): { messages: ChatMessage[]; clean: boolean; reasoningPending: boolean } {
  const messages: ChatMessage[] = [];
  /** The items each message was made from (parallel to `messages`). */
  const sources: ModelItem[][] = [];
  const push = (message: ChatMessage, from: ModelItem[]): void => {
    messages.push(message);
    sources.push(from);
  };
  let leadingSystem: { texts: string[]; from: ModelItem[] } | null = { texts: [], from: [] };
  let pendingReasoning: { text: string; from: ModelItem[] } | undefined;
  /** The assistant message later calls of the same turn join (its index in `messages`). */
  let openAssistant = -1;
  const assistant = (content: string | null, from: ModelItem): void => {
    const message: AssistantMessage = { role: 'assistant', content };
    const made = [from];
    if (pendingReasoning !== undefined && reasoningReplay !== 'none') {
      message[reasoningReplay] = pendingReasoning.text;
      made.unshift(...pendingReasoning.from);
    }
    pendingReasoning = undefined;
    push(message, made);
    openAssistant = messages.length - 1;
  };

  for (const item of items) {
    if (item.type === 'message' && (item.role === 'system' || item.role === 'developer')) {
      const text = textOf(item.content);
      if (leadingSystem !== null) {
        leadingSystem.texts.push(text);
        leadingSystem.from.push(item);
      } else {
        push({ role: 'system', content: text }, [item]);
      }
      openAssistant = -1;
      continue;
    }
    if (leadingSystem !== null) {
      if (leadingSystem.texts.length > 0) push({ role: 'system', content: leadingSystem.texts.join('\n\n') }, leadingSystem.from);
      leadingSystem = null;
    }
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') {
          assistant(textOf(item.content), item);
        } else {
          openAssistant = -1;
          push(userMessage(item.content), [item]);
        }
        break;
      case 'reasoning':
        pendingReasoning = pendingReasoning === undefined ? { text: item.text, from: [item] } : { text: pendingReasoning.text + item.text, from: [...pendingReasoning.from, item] };
        break;
      case 'function_call': {
        if (openAssistant === -1) assistant(null, item);
        else sources[openAssistant].push(item);
        const message = messages[openAssistant] as AssistantMessage;
        (message.tool_calls ??= []).push({ id: item.callId, type: 'function', function: { name: item.name, arguments: item.arguments } });
        break;
      }
      case 'function_call_output':
        push({ role: 'tool', tool_call_id: item.callId, content: item.output }, [item]);
        // outputs close the assistant turn: a later call starts a new assistant message
        openAssistant = -1;
        break;
    }
  }
  const reasoningPending = pendingReasoning !== undefined;
  const clean = leadingSystem === null && !reasoningPending;
  if (leadingSystem !== null && leadingSystem.texts.length > 0) push({ role: 'system', content: leadingSystem.texts.join('\n\n') }, leadingSystem.from);
  for (let i = 0; i < messages.length; i++) messages[i] = shared(messages[i], sources[i], reasoningReplay);
  orderToolResults(messages);
  return { messages, clean, reasoningPending };
}

type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

function userMessage(content: readonly ModelPart[]): ChatMessage {
  const hasImage = content.some((p) => p.type === 'image');
  return {
    role: 'user',
    content: hasImage
      ? content.map((p) => (p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image_url' as const, image_url: { url: p.url, ...(p.detail ? { detail: p.detail } : {}) } }))
      : textOf(content),
  };
}

/** A message made only from shared items, by its first item (see `shared`). */
const kept = new WeakMap<ModelItem, { from: readonly ModelItem[]; replay: ReasoningReplay; message: ChatMessage }>();

/**
 * Frozen model items are shared history: the engine converts a stored chain once and hands the
 * same objects every turn. A message made only from such items is kept (frozen) and is the same
 * object whenever the same items make it again, so the transport can keep its bytes
 * (`upstream/chat-body.ts`) and a long chain is not serialised again on every turn.
 */
function shared(message: ChatMessage, from: readonly ModelItem[], replay: ReasoningReplay): ChatMessage {
  if (from.length === 0 || !from.every((item) => Object.isFrozen(item))) return message;
  const before = kept.get(from[0]);
  if (before !== undefined && before.replay === replay && before.from.length === from.length && before.from.every((item, i) => item === from[i])) return before.message;
  if (Array.isArray(message.content)) for (const part of message.content) Object.freeze(part);
  Object.freeze(message.content);
  if (message.role === 'assistant' && message.tool_calls) for (const call of message.tool_calls) Object.freeze(Object.freeze(call).function);
  Object.freeze((message as AssistantMessage).tool_calls);
  kept.set(from[0], { from, replay, message: Object.freeze(message) });
  return message;
}

/**
 * Tool results directly after an assistant message follow its `tool_calls` order: some chat
 * templates pair calls and results by position, while Responses clients may answer in any order.
 */
function orderToolResults(messages: ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role !== 'assistant' || !message.tool_calls) continue;
    let end = i + 1;
    while (end < messages.length && messages[end].role === 'tool') end++;
    if (end - (i + 1) < 2) continue;
    const order = new Map(message.tool_calls.map((call, index) => [call.id, index]));
    const results = messages.slice(i + 1, end) as Array<Extract<ChatMessage, { role: 'tool' }>>;
    results.sort((a, b) => (order.get(a.tool_call_id) ?? order.size) - (order.get(b.tool_call_id) ?? order.size));
    messages.splice(i + 1, results.length, ...results);
  }
}

