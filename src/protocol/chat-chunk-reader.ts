/**
 * Reads the `data:` payloads of Chat Completions streams without parsing each chunk's envelope.
 *
 * A server streams one chunk per token, and its chunks come in a handful of shapes that differ
 * only in a few values: `{"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":…,
 * "choices":[{"index":0,"delta":{"content":"<token>"},"logprobs":null,"finish_reason":null}]}`
 * (vLLM, SGLang, llama.cpp; a tool call's argument fragments the same way), and once per stream the
 * role chunk, the finishing chunk and the usage chunk (and once per call its first fragment, with the
 * call's new id and the tool's name). Parsing and checking the whole envelope is
 * most of the gateway's work per token, and of a short answer's reading. So after a chunk is parsed
 * and checked in full, it is kept as a template: its text cut at its *holes* — the `id` string and
 * the `created` integer (they change from stream to stream), its delta's one string leaf (from
 * token to token), a tool call's id and the integers of its usage — and a later chunk that is exactly those fixed
 * texts around JSON literals of the same kinds is that same chunk with the holes' values replaced:
 * only the literals are read. Templates are shared by the streams of one model: a new stream's
 * role chunk, first token, finish and usage fill the templates earlier streams left.
 *
 * Why that is exact: a template is kept only when the server's text is byte for byte what
 * `JSON.stringify` makes of the parsed chunk (so it has no duplicate keys, no reordering, nothing
 * the parse dropped), and a hole's literal counts only when it is one JSON string (a string hole)
 * or one JSON integer written as `JSON.stringify` writes it (an integer hole). Any text that fits
 * the template so parses to the template's chunk with those values at the holes, which passes the
 * check as the template's chunk did (the check looks at kinds, and a hole keeps its kind); anything
 * else takes the full parse and check. A chunk that carries an error is never a template.
 */
import type { ChatChunk } from './chat.js';
import { integerEnd, isPlainInteger, scanned, stringEnd, stringValue } from './json-literals.js';
import { checkChatChunk } from './upstream-chunks.js';

/**
 * Stands for hole `i` while a template's text is made (no character that needs escaping: that
 * keeps `JSON.stringify` on its fast path). Text that holds one twice makes no template.
 */
const PLACEHOLDER = 'switchyard-chunk-template-hole-5e1f0c-';

/**
 * Templates made per stream at most: a stream whose chunks keep changing shape (interleaved
 * parallel tool calls, a field that changes with every chunk) stops paying for new templates.
 */
const MAX_TEMPLATES_PER_STREAM = 16;
/**
 * Chunks per stream that fit no template before the stream looks no further than its last one:
 * a stream whose chunks never fit (see above) does not try every shared template for each.
 */
const MAX_MISSES_PER_STREAM = 16;
/** Templates shared by a model's streams, the most recently filled or made kept: a few shapes per model. */
const SHARED_TEMPLATES = 12;
/** Models whose templates are kept, the most recently read: a gateway serving many does not let one crowd out another's. */
const MODELS_KEPT = 64;

type Holder = Record<string, unknown> | unknown[];

interface Hole {
  holder: Holder;
  key: string | number;
  /** An integer (else a string). */
  integer: boolean;
  /** The delta's string: the hole that changes from token to token. */
  leaf: boolean;
}

interface Template {
  /** The fixed texts around the holes: `fixed[0]`, hole 0, `fixed[1]`, …, hole n−1, `fixed[n]`. */
  fixed: string[];
  holes: Hole[];
  /** The chunk the template was made from; its holes are set on every fill. */
  chunk: ChatChunk;
  /** Which hole is the delta's string, or −1. */
  leaf: number;
  /** The stream fill whose values the chunk holds at its other holes (null after a general `fill`). */
  heldBy: StreamFill | null;
  /** The template the chunk after this one's filled last time (a stream's shapes come in order). */
  next: Template | null;
}

/** The templates a model's streams share. */
interface SharedTemplates {
  /** Most recently filled or made first. */
  list: Template[];
  /** The template the first chunk of the model's last stream filled or made (its role chunk, usually). */
  firstOfStream: Template | null;
}

/** Shared templates by model, the most recently read last (a Map keeps insertion order). */
const byModel = new Map<string, SharedTemplates>();

/** The model read last and its templates: most streams are of the model before them, and moving it to the end of `byModel` again costs more than the stream's other reads. */
let lastModel: string | null = null;
let lastShared: SharedTemplates | null = null;

/** The templates the streams of `model` share (made on its first stream). */
function sharedBy(model: string): SharedTemplates {
  if (model === lastModel) return lastShared!;
  let shared = byModel.get(model);
  if (shared === undefined) shared = { list: [], firstOfStream: null };
  else byModel.delete(model);
  byModel.set(model, shared);
  if (byModel.size > MODELS_KEPT) byModel.delete(byModel.keys().next().value!);
  lastModel = model;
  lastShared = shared;
  return shared;
}

/**
 * A template as one stream fills it, token after token: the text before and after its string leaf
 * with this stream's values at its other holes (its `id` and `created` do not change within a
 * stream), and those values, set again on each fill (another stream may have filled the shared
 * chunk in between). A token's chunk is then two comparisons and its literal.
 */
interface StreamFill {
  template: Template;
  prefix: string;
  suffix: string;
  leaf: Hole;
  values: unknown[];
}

export class ChatChunkReader {
  private readonly shared: SharedTemplates;
  private last: Template | null = null;
  private local: StreamFill | null = null;
  private templatesLeft = MAX_TEMPLATES_PER_STREAM;
  private missesLeft = MAX_MISSES_PER_STREAM;
  /** Chunks read from a template rather than parsed in full (for tests and diagnostics). */
  filled = 0;

  /** `model`: the model the stream is from, whose streams' templates this one shares. */
  constructor(model = '') {
    this.shared = sharedBy(model);
  }

  /**
   * The chunk `data` holds, checked (`checkChatChunk`); throws as `JSON.parse` or the check does.
   * The chunk may be a template's, shared with other streams: it is valid until the next `read`
   * of any reader (the decoder copies what it needs out of it at once).
   */
  read(data: string): ChatChunk {
    const local = this.local;
    if (local !== null && fillLocal(local, data)) {
      this.filled++;
      return local.template.chunk;
    }
    const template = this.templateFor(data);
    if (template !== null) {
      this.filled++;
      this.follow(template);
      this.local = streamFill(template, data);
      return template.chunk;
    }
    const chunk = checkChatChunk(JSON.parse(data));
    if (this.templatesLeft > 0) {
      const holes = holesOf(chunk);
      if (holes !== null) {
        this.templatesLeft--;
        const made = templateOf(chunk, holes, data);
        if (made !== null) {
          share(this.shared.list, made);
          this.follow(made);
          this.local = null;
        }
      }
    }
    return chunk;
  }

  /** Notes that `template` came after the last one (the order the next stream tries them in). */
  private follow(template: Template): void {
    if (this.last === null) this.shared.firstOfStream = template;
    else if (this.last !== template) this.last.next = template;
    this.last = template;
  }

  /** The template `data` fills (its holes set), or null; the likeliest ones are tried first. */
  private templateFor(data: string): Template | null {
    const first = this.last ?? this.shared.firstOfStream;
    if (first !== null && fill(first, data)) return first;
    const second = this.last?.next ?? null;
    if (second !== null && fill(second, data)) return second;
    if (this.missesLeft === 0) return null;
    const shared = this.shared.list;
    for (let i = 0; i < shared.length; i++) {
      const template = shared[i];
      if (template === first || template === second || !fill(template, data)) continue;
      // the most recently filled first
      if (i > 0) {
        shared.splice(i, 1);
        shared.unshift(template);
      }
      return template;
    }
    this.missesLeft--;
    return null;
  }
}

/** Keeps a new template in front of the shared ones, dropping the least recently filled or made. */
function share(shared: Template[], template: Template): void {
  shared.unshift(template);
  const dropped = shared.length > SHARED_TEMPLATES ? shared.pop() : undefined;
  // a dropped template is tried no more through the list; a link to it holds it alone, not a chain
  if (dropped) dropped.next = null;
}

/** Where each hole's literal starts and ends in the text just filled, and whether it has escapes (scratch). */
const starts: number[] = [];
const ends: number[] = [];
const escaped: boolean[] = [];
const integers: number[] = [];

/** Sets the template's holes from `data` and returns true, or false when `data` does not fit it. */
function fill(template: Template, data: string): boolean {
  const { fixed, holes } = template;
  // the text after the last hole first: it tells most shapes apart (a token, the finish, the usage)
  const tail = fixed[holes.length];
  const tailAt = data.length - tail.length;
  if (tailAt < 0 || data.slice(tailAt) !== tail) return false;
  let at = 0;
  for (let i = 0; i < holes.length; i++) {
    const text = fixed[i];
    // `slice(…) ===` compares as memcmp; `startsWith` walks character by character on Node 20
    if (data.slice(at, at + text.length) !== text) return false;
    at += text.length;
    const end = holes[i].integer ? integerEnd(data, at) : stringEnd(data, at);
    if (end < 0) return false;
    starts[i] = at;
    ends[i] = end;
    escaped[i] = scanned.escaped;
    integers[i] = scanned.integer;
    at = end;
  }
  if (at !== tailAt) return false;
  // the text fits: the literals' values (a string's escapes may still not be JSON)
  for (let i = 0; i < holes.length; i++) {
    const value = holes[i].integer ? integers[i] : stringValue(data, starts[i], ends[i], escaped[i]);
    if (value === null) return false;
    values[i] = value;
  }
  for (let i = 0; i < holes.length; i++) (holes[i].holder as Record<string | number, unknown>)[holes[i].key] = values[i];
  template.heldBy = null;
  return true;
}

const values: unknown[] = [];

/** How `template`, just filled from `data`, is filled from this stream's next chunks; null without a string leaf. */
function streamFill(template: Template, data: string): StreamFill | null {
  const leaf = template.leaf;
  if (leaf < 0) return null;
  const { holes } = template;
  const local = {
    template,
    prefix: data.slice(0, starts[leaf]),
    suffix: data.slice(ends[leaf]),
    leaf: holes[leaf],
    values: holes.map(({ holder, key }) => (holder as Record<string | number, unknown>)[key]),
  };
  template.heldBy = local;
  return local;
}

/** `fill` for a chunk of the stream that filled `local` last: its text around one string literal. */
function fillLocal(local: StreamFill, data: string): boolean {
  const { prefix, suffix } = local;
  const start = prefix.length;
  const end = data.length - suffix.length;
  // at least `""` between the two
  if (end - start < 2) return false;
  if (data.slice(0, start) !== prefix || data.slice(end) !== suffix) return false;
  if (stringEnd(data, start) !== end) return false;
  const value = stringValue(data, start, end, scanned.escaped);
  if (value === null) return false;
  const template = local.template;
  // the other holes hold this stream's values unless another stream filled the chunk since
  if (template.heldBy !== local) {
    const { holes } = template;
    for (let i = 0; i < holes.length; i++) (holes[i].holder as Record<string | number, unknown>)[holes[i].key] = local.values[i];
    template.heldBy = local;
  }
  (local.leaf.holder as Record<string | number, unknown>)[local.leaf.key] = value;
  return true;
}

/**
 * The holes of a checked chunk, or null when it should make no template: one carrying an error, or
 * one with nothing that changes (then its text alone would do, but such chunks do not recur). The
 * holes: `id` (a string), `created` (an integer), the one string of a single choice's delta
 * (`content`, or a tool call's `function.arguments` when the fragment has no id or name), a call's
 * first fragment's `id` and `function.arguments` (one call: its type and name stay text, so the
 * template serves the next call of that tool) and the integers of `usage`.
 */
function holesOf(chunk: ChatChunk): Hole[] | null {
  if (chunk.error !== undefined) return null;
  const record = chunk as Record<string, unknown>;
  const holes: Hole[] = [];
  if (typeof record.id === 'string') holes.push({ holder: record, key: 'id', integer: false, leaf: false });
  if (isPlainInteger(record.created)) holes.push({ holder: record, key: 'created', integer: true, leaf: false });
  const choices = chunk.choices;
  if (Array.isArray(choices) && choices.length === 1) {
    const delta = choices[0]?.delta;
    if (typeof delta === 'object' && delta !== null) {
      if (Array.isArray(delta.tool_calls) && delta.tool_calls.some((call) => call?.id != null)) {
        // a call's first fragment: its id is new every time (a hole of its own), its type and name
        // come again with the next call of that tool (fixed text), its arguments are the leaf
        // (some servers send them whole here, others start them with "")
        const call = delta.tool_calls.length === 1 ? delta.tool_calls[0] : undefined;
        const fn = call?.function;
        if (typeof call?.id !== 'string' || typeof fn !== 'object' || fn === null || typeof fn.arguments !== 'string') return null;
        holes.push({ holder: call as Record<string, unknown>, key: 'id', integer: false, leaf: false });
        holes.push({ holder: fn as Record<string, unknown>, key: 'arguments', integer: false, leaf: true });
      } else {
        const leaves: Hole[] = [];
        for (const name in delta) collectStringLeaves(delta as Record<string, unknown>, name, (delta as Record<string, unknown>)[name], leaves);
        if (leaves.length === 1) holes.push(leaves[0]);
      }
    }
  }
  if (typeof chunk.usage === 'object' && chunk.usage !== null) collectIntegers(chunk.usage as Record<string, unknown>, holes);
  return holes.length > 0 ? holes : null;
}

/**
 * The string leaves under `holder[key]`, two at most (more than one already disqualifies). Strings
 * nested deeper than a delta ever nests them are not looked for: they stay in the template's text.
 */
function collectStringLeaves(holder: Holder, key: string | number, value: unknown, leaves: Hole[], depth = 0): void {
  if (leaves.length > 1) return;
  if (typeof value === 'string') leaves.push({ holder, key, integer: false, leaf: true });
  else if (typeof value === 'object' && value !== null && depth < 6) {
    if (Array.isArray(value)) for (let i = 0; i < value.length; i++) collectStringLeaves(value, i, value[i], leaves, depth + 1);
    else for (const name in value) collectStringLeaves(value as Record<string, unknown>, name, (value as Record<string, unknown>)[name], leaves, depth + 1);
  }
}

/** The integers of a usage object and of the objects in it (`prompt_tokens_details`). */
function collectIntegers(holder: Record<string, unknown>, holes: Hole[], depth = 0): void {
  for (const key in holder) {
    const value = holder[key];
    if (isPlainInteger(value)) holes.push({ holder, key, integer: true, leaf: false });
    else if (depth < 2 && typeof value === 'object' && value !== null && !Array.isArray(value)) collectIntegers(value as Record<string, unknown>, holes, depth + 1);
  }
}

/**
 * The template of `chunk` around its holes, or null when `data` is not exactly the chunk's JSON, or
 * when `JSON.stringify` cannot write the chunk (nested thousands deep, too long once escaped): that
 * chunk was read in full and is returned as it is, its values put back.
 */
function templateOf(chunk: ChatChunk, holes: Hole[], data: string): Template | null {
  const kept = holes.map(({ holder, key }) => (holder as Record<string | number, unknown>)[key]);
  holes.forEach(({ holder, key }, i) => {
    (holder as Record<string | number, unknown>)[key] = `${PLACEHOLDER}${i}`;
  });
  try {
    const text = JSON.stringify(chunk);
    // where each hole sits in the text; twice (a server that sends a placeholder itself, as a value
    // and elsewhere) makes none: the first could be the other string, and the check below would not tell
    const at = holes.map((_, i) => {
      const placeholder = JSON.stringify(`${PLACEHOLDER}${i}`);
      const first = text.indexOf(placeholder);
      return first >= 0 && text.indexOf(placeholder, first + 1) < 0 ? first : -1;
    });
    if (at.includes(-1)) return null;
    // the holes in the order of the text
    const order = holes.map((_, i) => i).sort((a, b) => at[a] - at[b]);
    const fixed: string[] = [];
    let from = 0;
    let expected = '';
    for (const i of order) {
      fixed.push(text.slice(from, at[i]));
      expected += fixed[fixed.length - 1] + (holes[i].integer ? String(kept[i]) : JSON.stringify(kept[i]));
      from = at[i] + `${PLACEHOLDER}${i}`.length + 2;
    }
    fixed.push(text.slice(from));
    expected += fixed[fixed.length - 1];
    if (expected !== data) return null;
    const ordered = order.map((i) => holes[i]);
    return { fixed, holes: ordered, chunk, leaf: ordered.findIndex((hole) => hole.leaf), heldBy: null, next: null };
  } catch {
    return null;
  } finally {
    holes.forEach(({ holder, key }, i) => {
      (holder as Record<string | number, unknown>)[key] = kept[i];
    });
  }
}
