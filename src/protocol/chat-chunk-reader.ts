/**
 * Reads the `data:` payloads of one Chat Completions stream without parsing each token's envelope.
 *
 * A server streams one chunk per token, and all but one or two of them are the same text with one
 * string changed: `{"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":…,
 * "choices":[{"index":0,"delta":{"content":"<token>"},"logprobs":null,"finish_reason":null}]}`
 * (vLLM, SGLang, llama.cpp; a tool call's argument fragments the same way). Parsing and checking
 * the whole envelope is most of the gateway's work per token. So after a chunk is parsed and
 * checked in full, the reader keeps it as a template — the text before and after its one string
 * leaf — and a later chunk that is exactly that text around a JSON string literal is that same
 * chunk with the leaf replaced: only the literal is parsed.
 *
 * Why that is exact: a template is kept only when the server's text is byte for byte what
 * `JSON.stringify` makes of the parsed chunk (so it has no duplicate keys, no reordering, nothing
 * the parse dropped), and a literal counts only when it parses as one JSON string on its own. Any
 * text that fits the template with such a literal parses to the template's chunk with that string
 * as the leaf, and anything else takes the full parse and check. A chunk that carries `usage` or an
 * error is never a template (its numbers change from chunk to chunk).
 */
import type { ChatChunk } from './chat.js';
import { checkChatChunk } from './upstream-chunks.js';

/**
 * Stands for the leaf while the template's text is made (no character that needs escaping: that
 * keeps `JSON.stringify` on its fast path). Text that holds it twice makes no template.
 */
const PLACEHOLDER = 'switchyard-chunk-template-leaf-5e1f0c';
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER);

/**
 * Templates made per stream at most: a stream whose chunks keep changing shape (interleaved
 * parallel tool calls) stops paying for new templates, and is read in full as before.
 */
const MAX_TEMPLATES = 16;

type Holder = Record<string, unknown> | unknown[];

interface Template {
  prefix: string;
  suffix: string;
  /** The chunk the template was made from; its leaf is replaced on every fill. */
  chunk: ChatChunk;
  holder: Holder;
  key: string | number;
}

export class ChatChunkReader {
  private template: Template | null = null;
  private templatesLeft = MAX_TEMPLATES;
  /** Chunks read from a template rather than parsed in full (for tests and diagnostics). */
  filled = 0;

  /**
   * The chunk `data` holds, checked (`checkChatChunk`); throws as `JSON.parse` or the check does.
   * The chunk is the reader's until the next `read`: a later read may reuse and change it.
   */
  read(data: string): ChatChunk {
    if (this.template !== null) {
      const chunk = fill(this.template, data);
      if (chunk !== null) {
        this.filled++;
        return chunk;
      }
    }
    const chunk = checkChatChunk(JSON.parse(data));
    if (this.templatesLeft > 0) {
      const leaf = onlyStringLeaf(chunk);
      if (leaf !== null) {
        this.templatesLeft--;
        this.template = templateOf(chunk, leaf.holder, leaf.key, data) ?? this.template;
      }
    }
    return chunk;
  }
}

/** The template's chunk with its leaf set from `data`, or null when `data` does not fit it. */
function fill(template: Template, data: string): ChatChunk | null {
  const { prefix, suffix } = template;
  const end = data.length - suffix.length;
  // at least `""` between the two
  if (end - prefix.length < 2) return null;
  // `slice(…) ===` compares as memcmp; `startsWith` walks character by character on Node 20
  if (data.slice(0, prefix.length) !== prefix || data.slice(end) !== suffix) return null;
  const value = stringLiteral(data, prefix.length, end);
  if (value === null) return null;
  (template.holder as Record<string | number, unknown>)[template.key] = value;
  return template.chunk;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The string the JSON text `data[start, end)` is when it is one string literal alone, or null.
 * A literal without escapes is its characters between the quotes (`JSON.parse` would also put a
 * short one in V8's string table, a hash lookup per token); one with escapes is parsed.
 */
function stringLiteral(data: string, start: number, end: number): string | null {
  if (data.charCodeAt(start) === QUOTE && data.charCodeAt(end - 1) === QUOTE) {
    let plain = true;
    for (let i = start + 1; i < end - 1; i++) {
      const code = data.charCodeAt(i);
      // a quote inside is not one literal; a control character is not JSON
      if (code === QUOTE || code < 0x20) return null;
      if (code === BACKSLASH) {
        plain = false;
        break;
      }
    }
    if (plain) return data.slice(start + 1, end - 1);
  }
  let value: unknown;
  try {
    value = JSON.parse(data.slice(start, end));
  } catch {
    return null;
  }
  return typeof value === 'string' ? value : null;
}

/**
 * Where the one string of a single choice's delta sits (`delta.content`, or a tool call's
 * `function.arguments` when the fragment has no id or name), or null when the chunk has no such
 * single leaf, carries usage or an error, or ends its choice (a `finish_reason`: no later chunk of
 * the stream has its text, so its template would only cost — vLLM's last token when it stops for
 * length, a tool call's last argument fragment from some servers).
 */
function onlyStringLeaf(chunk: ChatChunk): StringLeaf | null {
  if (chunk.usage != null || chunk.error !== undefined) return null;
  const choices = chunk.choices;
  if (!Array.isArray(choices) || choices.length !== 1 || choices[0]?.finish_reason != null) return null;
  const delta = choices[0]?.delta;
  if (typeof delta !== 'object' || delta === null) return null;
  const leaves: StringLeaf[] = [];
  for (const name in delta) collectStringLeaves(delta as Record<string, unknown>, name, (delta as Record<string, unknown>)[name], leaves);
  return leaves.length === 1 ? leaves[0] : null;
}

interface StringLeaf {
  holder: Holder;
  key: string | number;
}

/**
 * The string leaves under `holder[key]`, two at most (more than one already disqualifies). Strings
 * nested deeper than a delta ever nests them are not looked for: they stay in the template's text.
 */
function collectStringLeaves(holder: Holder, key: string | number, value: unknown, leaves: StringLeaf[], depth = 0): void {
  if (leaves.length > 1) return;
  if (typeof value === 'string') leaves.push({ holder, key });
  else if (typeof value === 'object' && value !== null && depth < 6) {
    if (Array.isArray(value)) for (let i = 0; i < value.length; i++) collectStringLeaves(value, i, value[i], leaves, depth + 1);
    else for (const name in value) collectStringLeaves(value as Record<string, unknown>, name, (value as Record<string, unknown>)[name], leaves, depth + 1);
  }
}

/**
 * The template of `chunk` around its leaf, or null when `data` is not exactly the chunk's JSON, or
 * when `JSON.stringify` cannot write the chunk (nested thousands deep, too long once escaped): that
 * chunk was read in full and is returned as it is, its leaf put back.
 */
function templateOf(chunk: ChatChunk, holder: Holder, key: string | number, data: string): Template | null {
  const record = holder as Record<string | number, unknown>;
  const leaf = record[key] as string;
  record[key] = PLACEHOLDER;
  try {
    const text = JSON.stringify(chunk);
    const at = text.indexOf(PLACEHOLDER_JSON);
    // twice (a server that sends the placeholder itself, as the leaf and elsewhere): the first
    // could be the other string, and the check below would not tell
    if (at < 0 || text.indexOf(PLACEHOLDER_JSON, at + 1) >= 0) return null;
    const prefix = text.slice(0, at);
    const suffix = text.slice(at + PLACEHOLDER_JSON.length);
    const literal = JSON.stringify(leaf);
    const end = at + literal.length;
    const exact = data.length === end + suffix.length && data.slice(0, at) === prefix && data.slice(at, end) === literal && data.slice(end) === suffix;
    return exact ? { prefix, suffix, chunk, holder, key } : null;
  } catch {
    return null;
  } finally {
    record[key] = leaf;
  }
}
