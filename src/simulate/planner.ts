import { constrainedText } from './grammar-output.js';
import { findScriptSource, parseScript, roundIndexOf, stripScriptLines } from './script.js';
import {
  isObj,
  type FinishReason,
  type Json,
  type PlannedFailure,
  type PlannedToolCall,
  type PlannedUsage,
  type PlanOptions,
  type RoundPlan,
  type ScriptStep,
  type ScriptToolCall,
  type SimMessage,
  type SimRequest,
  type SimTool,
} from './script-types.js';

const ARG_PIECE_CHARS = 8;
const TOOL_RESULT_PREVIEW = 200;
const REASONING_PREVIEW = 60;

// ---------------------------------------------------------------------------------------------
// Splitting into pieces ("tokens")

const SURROGATE = /[\uD800-\uDFFF]/;
const WORDS = /\s*\S+|\s+$/g;

/** Word-sized pieces, each carrying its leading whitespace: "a b" → ["a", " b"]. */
export function splitWords(s: string): string[] {
  return s ? (s.match(WORDS) ?? []) : [];
}

/** Pieces of `size` characters (code points, never splitting a surrogate pair). */
export function splitBySize(s: string, size: number): string[] {
  if (!s) return [];
  const n = Math.max(1, Math.floor(size));
  const out: string[] = [];
  if (!SURROGATE.test(s)) {
    for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
    return out;
  }
  const cps = Array.from(s);
  for (let i = 0; i < cps.length; i += n) out.push(cps.slice(i, i + n).join(''));
  return out;
}

/** Exactly `count` roughly equal pieces (fewer when the text has fewer characters). */
export function splitEvenly(s: string, count: number): string[] {
  if (!s) return [];
  const cps: string[] | string = SURROGATE.test(s) ? Array.from(s) : s;
  const len = cps.length;
  const n = Math.max(1, Math.min(Math.floor(count), len));
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const a = Math.floor((i * len) / n);
    const b = Math.floor(((i + 1) * len) / n);
    out.push(typeof cps === 'string' ? cps.slice(a, b) : cps.slice(a, b).join(''));
  }
  return out;
}

type Splitter = (s: string) => string[];

function splitters(step: ScriptStep | null): { prose: Splitter; args: Splitter } {
  if (step?.chunks !== undefined && step.chunks >= 1) {
    const n = step.chunks;
    return { prose: (s) => splitEvenly(s, n), args: (s) => splitEvenly(s, n) };
  }
  if (step?.chunk_size !== undefined && step.chunk_size >= 1) {
    const n = step.chunk_size;
    return { prose: (s) => splitBySize(s, n), args: (s) => splitBySize(s, n) };
  }
  return { prose: splitWords, args: (s) => splitBySize(s, ARG_PIECE_CHARS) };
}

// ---------------------------------------------------------------------------------------------
// Default behaviour (no script, or past the end of it)

/** A value that satisfies `schema` well enough for a demo: required properties filled recursively. */
export function placeholderFor(schema: unknown, depth = 0): unknown {
  if (!isObj(schema) || depth > 8) return {};
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts) && alts.length > 0) {
    const nonNull = alts.find((a: Json) => !(isObj(a) && a.type === 'null'));
    return placeholderFor(nonNull ?? alts[0], depth + 1);
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t: Json) => t !== 'null') ?? type[0];
  if (type === undefined && isObj(schema.properties)) type = 'object';
  switch (type) {
    case 'string':
      return 'example';
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'null':
      return null;
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = isObj(schema.properties) ? schema.properties : {};
      if (Array.isArray(schema.required)) {
        for (const key of schema.required) if (typeof key === 'string') out[key] = placeholderFor(props[key], depth + 1);
      }
      return out;
    }
    default:
      return {};
  }
}

/** The JSON text after "with" (balanced braces, strings respected), else everything after it. */
function jsonAfterWith(rest: string): string | null {
  const start = rest.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < rest.length; i++) {
    const c = rest[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return rest.slice(start, i + 1);
  }
  return rest.slice(start).trim();
}

const CALL_OR_USE = /\b(?:call|use)\s+[`'"]?([A-Za-z0-9_.:-]+)[`'"]?/gi;

interface DetectedCall {
  name: string;
  args: string | null;
}

/** "call <name> [with <json>]" / "use <name> …", or "call" plus a tool name appearing literally. */
function detectToolCall(text: string, tools: SimTool[]): DetectedCall | null {
  if (tools.length === 0) return null;
  const names = new Map(tools.map((t) => [t.name.toLowerCase(), t.name]));
  for (const m of text.matchAll(CALL_OR_USE)) {
    const name = names.get(m[1]!.toLowerCase());
    if (name === undefined) continue;
    const after = text.slice(m.index! + m[0].length);
    const withMatch = /^\s+with\s/i.exec(after);
    return { name, args: withMatch ? jsonAfterWith(after.slice(withMatch[0].length)) : null };
  }
  if (!/\bcall\b/i.test(text)) return null;
  const lower = text.toLowerCase();
  let best: { name: string; at: number } | null = null;
  for (const t of tools) {
    const at = lower.indexOf(t.name.toLowerCase());
    if (at >= 0 && (best === null || at < best.at)) best = { name: t.name, at };
  }
  if (!best) return null;
  const after = text.slice(best.at + best.name.length);
  const withMatch = /\swith\s/i.exec(after);
  return { name: best.name, args: withMatch ? jsonAfterWith(after.slice(withMatch.index + withMatch[0].length)) : null };
}

function placeholderArgs(tools: SimTool[], name: string): string {
  const tool = tools.find((t) => t.name === name);
  const value = placeholderFor(tool?.parameters ?? { type: 'object' });
  return JSON.stringify(isObj(value) ? value : {});
}

interface Content {
  reasoning: string;
  text: string | null;
  refusal: string | null;
  calls: ScriptToolCall[];
}

function defaultContent(req: SimRequest): Content {
  const last = req.messages[req.messages.length - 1];
  let lastUser = '';
  for (let i = req.messages.length - 1; i >= 0; i--) {
    if (req.messages[i]!.role === 'user') {
      lastUser = stripScriptLines(req.messages[i]!.text);
      break;
    }
  }
  const effort = req.reasoningEffort;
  const reasoning = effort && effort !== 'none' ? `Thinking about: ${lastUser.slice(0, REASONING_PREVIEW)}` : '';
  const content: Content = { reasoning, text: null, refusal: null, calls: [] };

  if (last?.role === 'tool') {
    content.text = `The tool returned: ${last.text.slice(0, TOOL_RESULT_PREVIEW)}`;
    return content;
  }

  const choice = req.toolChoice;
  if (choice.kind !== 'none' && req.tools.length > 0) {
    const detected = detectToolCall(lastUser, req.tools);
    let name: string | null = null;
    let args: string | null = null;
    if (choice.kind === 'named') {
      name = choice.name;
      if (detected?.name === name) args = detected.args;
    } else if (detected) {
      ({ name, args } = detected);
    } else if (choice.kind === 'required') {
      name = req.tools[0]!.name;
    }
    if (name !== null) {
      content.calls.push({ name, arguments: args ?? placeholderArgs(req.tools, name) });
      return content;
    }
  }

  const echo = `You said: ${lastUser}`;
  if (req.responseFormat?.type === 'json_schema') {
    const value = placeholderFor(req.responseFormat.schema ?? { type: 'object' });
    content.text = JSON.stringify(value);
  } else if (req.responseFormat?.type === 'json_object') {
    content.text = JSON.stringify({ message: echo });
  } else {
    content.text = echo;
  }
  return content;
}

function scriptedContent(step: ScriptStep): Content {
  return {
    reasoning: step.reasoning ?? '',
    text: step.text ?? null,
    refusal: step.refusal ?? null,
    calls: step.tool_calls ?? [],
  };
}

const hasContent = (step: ScriptStep) =>
  step.text !== undefined || step.reasoning !== undefined || step.refusal !== undefined || step.tool_calls !== undefined;

// ---------------------------------------------------------------------------------------------
// The planner

/** Rough prompt size: characters of all message text / 4, at least 1. */
export function promptTokensOf(messages: SimMessage[]): number {
  let chars = 0;
  for (const m of messages) chars += m.text.length;
  return Math.max(1, Math.ceil(chars / 4));
}

export function errorTypeFor(status: number): string {
  return status >= 500 ? 'InternalServerError' : 'BadRequestError';
}

const nonNeg = (v: number | undefined): number | null => (typeof v === 'number' && v >= 0 ? Math.floor(v) : null);

/** Plans the answer to one request. Deterministic: same request, same plan (ids are minted later). */
export function planRound(req: SimRequest, opts: PlanOptions = {}): RoundPlan {
  const roundIndex = roundIndexOf(req.messages);
  const source = findScriptSource(req.messages);
  let step: ScriptStep | null = null;
  let failure: PlannedFailure | null = null;

  if (source !== null) {
    const script = parseScript(source);
    if (typeof script === 'string') {
      failure = { status: 400, type: 'BadRequestError', message: script, failTimes: null, key: '' };
    } else {
      // the script's own line is not what the user said (it names the strings it looks for)
      const lastUser = stripScriptLines([...req.messages].reverse().find((m) => m.role === 'user')?.text ?? '');
      const matches = (alternative: NonNullable<typeof script.when>[number]) =>
        alternative.user_contains !== undefined ? lastUser.includes(alternative.user_contains) : req.messages.some((m) => stripScriptLines(m.text).includes(alternative.any_contains!));
      const rounds = script.when?.find(matches)?.rounds ?? script.rounds;
      if (roundIndex < rounds.length) step = rounds[roundIndex]!;
      else if (script.repeat_last && rounds.length > 0) step = rounds[rounds.length - 1]!;
    }
    if (step && typeof step.status === 'number' && step.status >= 400) {
      failure = {
        status: Math.floor(step.status),
        type: errorTypeFor(step.status),
        message: step.error ?? 'simulated failure',
        failTimes: step.fail_times !== undefined ? Math.floor(step.fail_times) : null,
        key: `${roundIndex}\u0000${source}`,
      };
    }
  }

  const content = step && hasContent(step) ? scriptedContent(step) : defaultContent(req);
  if (req.grammar && !failure) {
    // decoding under a grammar: the answer is text that matches it, never a tool call
    const constrained = constrainedText(req.grammar, content.text);
    if ('error' in constrained) failure = { status: 400, type: 'BadRequestError', message: constrained.error, failTimes: null, key: '' };
    else Object.assign(content, { text: constrained.text, refusal: null, calls: [] });
  }
  const split = splitters(step);
  let reasoning = split.prose(content.reasoning);
  let text = content.text === null ? [] : split.prose(content.text);
  let refusal = content.refusal === null ? [] : split.prose(content.refusal);
  let toolCalls: PlannedToolCall[] = content.calls.map((c) => {
    const args = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {});
    return { id: c.id ?? null, name: c.name, arguments: args, pieces: split.args(args) };
  });

  // Stop strings: generation ends before the first one the text would contain (nothing after it,
  // no tool calls either), as vLLM does, which names the matched string in `stop_reason`.
  let stopReason: string | null = null;
  if (req.stop.length > 0 && text.length > 0) {
    const whole = text.join('');
    let at = -1;
    for (const s of req.stop) {
      const i = whole.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        stopReason = s;
      }
    }
    if (stopReason !== null) {
      text = at > 0 ? split.prose(whole.slice(0, at)) : [];
      toolCalls = [];
    }
  }

  // Respect max tokens: every piece counts as one token.
  let truncated = false;
  if (req.maxTokens !== null) {
    let budget = req.maxTokens;
    const take = (pieces: string[]): string[] => {
      if (pieces.length <= budget) {
        budget -= pieces.length;
        return pieces;
      }
      truncated = true;
      const kept = pieces.slice(0, budget);
      budget = 0;
      return kept;
    };
    reasoning = take(reasoning);
    text = take(text);
    refusal = take(refusal);
    const kept: PlannedToolCall[] = [];
    for (const c of toolCalls) {
      if (budget === 0 && c.pieces.length > 0) {
        truncated = true;
        break;
      }
      const pieces = take(c.pieces);
      kept.push(pieces === c.pieces ? c : { ...c, pieces, arguments: pieces.join('') });
    }
    toolCalls = kept;
  }

  let finishReason: FinishReason;
  if (truncated) {
    finishReason = 'length';
    stopReason = null;
  } else if (stopReason !== null) finishReason = 'stop';
  else if (step?.finish_reason) finishReason = step.finish_reason;
  // vLLM: a named tool_choice is served by guided decoding and finishes with "stop".
  else if (toolCalls.length > 0 && req.toolChoice.kind !== 'named') finishReason = 'tool_calls';
  else finishReason = 'stop';

  let pieces = reasoning.length + text.length + refusal.length;
  for (const c of toolCalls) pieces += c.pieces.length;
  const usage: PlannedUsage = {
    prompt_tokens: promptTokensOf(req.messages),
    completion_tokens: Math.max(1, pieces),
    reasoning_tokens: reasoning.length,
  };
  if (step?.usage) {
    const u = step.usage;
    if (typeof u.prompt_tokens === 'number') usage.prompt_tokens = u.prompt_tokens;
    if (typeof u.completion_tokens === 'number') usage.completion_tokens = u.completion_tokens;
    if (typeof u.reasoning_tokens === 'number') usage.reasoning_tokens = u.reasoning_tokens;
  }

  return {
    roundIndex,
    scripted: step !== null,
    failure,
    reasoningField: step?.reasoning_field ?? 'reasoning',
    reasoning,
    text,
    refusal,
    toolCalls,
    toolCallStyle: step?.tool_call_style ?? 'vllm',
    finishReason,
    stopReason,
    usage,
    hang: step?.hang === true,
    hangAfterChunks: nonNeg(step?.hang_after_chunks),
    closeAfterChunks: nonNeg(step?.close_after_chunks),
    errorAfterChunks: nonNeg(step?.error_after_chunks),
    delayMs: nonNeg(step?.delay_ms) ?? Math.max(0, opts.defaultDelayMs ?? 0),
    firstDelayMs: nonNeg(step?.first_delay_ms) ?? 0,
    emptyDeltas: step?.empty_deltas === true,
  };
}
