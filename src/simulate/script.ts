// The simulator's script: types, parsing, request normalisation and the round planner.
// Pure: no I/O, no clock, no randomness. The format is documented in ./README.md.
//
// Both endpoints (/v1/chat/completions and vLLM's /v1/responses) are normalised into one
// `SimRequest` (a flat list of role + text messages), so there is exactly one planner. The
// planner turns the request into a `RoundPlan`: the pieces ("tokens") to stream, the finish
// reason, the usage and the failure/timing controls. The encoders in chat-stream.ts and
// responses-stream.ts turn a plan into wire chunks; server.ts owns sockets, timers and the
// `fail_times` counters.

import { constrainedText, type SimGrammar } from './grammar-output.js';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export type ToolCallStyle = 'vllm' | 'whole' | 'interleaved';
export type ReasoningField = 'reasoning' | 'reasoning_content';

/** One tool call a step asks for. `arguments` as a string is sent verbatim (may be invalid JSON). */
export interface ScriptToolCall {
  name: string;
  arguments?: unknown;
  id?: string;
}

/** One round of a script. Every field is optional; see README.md for the semantics. */
export interface ScriptStep {
  text?: string;
  reasoning?: string;
  reasoning_field?: ReasoningField;
  refusal?: string;
  tool_calls?: ScriptToolCall[];
  chunks?: number;
  chunk_size?: number;
  tool_call_style?: ToolCallStyle;
  finish_reason?: FinishReason;
  usage?: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number };
  status?: number;
  error?: string;
  fail_times?: number;
  hang?: boolean;
  hang_after_chunks?: number;
  close_after_chunks?: number;
  error_after_chunks?: number;
  delay_ms?: number;
  first_delay_ms?: number;
  empty_deltas?: boolean;
}

export interface Script {
  rounds: ScriptStep[];
  repeat_last?: boolean;
}

/** A conversation message reduced to what the simulator needs. */
export interface SimMessage {
  role: string; // system | developer | user | assistant | tool
  text: string;
}

export interface SimTool {
  name: string;
  parameters: unknown;
}

export type SimToolChoice =
  | { kind: 'auto' }
  | { kind: 'none' }
  | { kind: 'required' }
  | { kind: 'named'; name: string };

export type SimResponseFormat = { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | null;

/** The dialect-neutral view of a request. */
export interface SimRequest {
  dialect: 'chat' | 'responses';
  model: string;
  stream: boolean;
  includeUsage: boolean;
  messages: SimMessage[];
  tools: SimTool[];
  toolChoice: SimToolChoice;
  responseFormat: SimResponseFormat;
  reasoningEffort: string | null;
  maxTokens: number | null;
  /** Stop strings (Chat Completions `stop`): the output ends before the first one it would contain. */
  stop: string[];
  /** vLLM `structured_outputs` `grammar` (Lark) or `regex`: the whole output matches it. */
  grammar: SimGrammar | null;
}

export interface PlannedToolCall {
  /** Id from the script, or null: the encoder mints one in its dialect's format. */
  id: string | null;
  name: string;
  /** The full (possibly truncated) argument text = pieces.join(''). */
  arguments: string;
  pieces: string[];
}

export interface PlannedFailure {
  status: number;
  type: string;
  message: string;
  /** null = fail every time; N = fail only the first N requests reaching `key`. */
  failTimes: number | null;
  key: string;
}

export interface PlannedUsage {
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
}

export interface RoundPlan {
  roundIndex: number;
  scripted: boolean;
  failure: PlannedFailure | null;
  reasoningField: ReasoningField;
  reasoning: string[];
  text: string[];
  refusal: string[];
  toolCalls: PlannedToolCall[];
  toolCallStyle: ToolCallStyle;
  finishReason: FinishReason;
  /** The stop string that ended the output (vLLM's `stop_reason`), else null. */
  stopReason: string | null;
  usage: PlannedUsage;
  hang: boolean;
  hangAfterChunks: number | null;
  closeAfterChunks: number | null;
  errorAfterChunks: number | null;
  delayMs: number;
  firstDelayMs: number;
  emptyDeltas: boolean;
}

export interface PlanOptions {
  defaultDelayMs?: number;
}

export const SCRIPT_PREFIX = '#sim ';
const ARG_PIECE_CHARS = 8;
const TOOL_RESULT_PREVIEW = 200;
const REASONING_PREVIEW = 60;

// ---------------------------------------------------------------------------------------------
// Request normalisation

type Json = any;

const isObj = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text of a Chat or Responses `content`: a string, or the concatenation of its text parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    if (typeof part === 'string') out += part;
    else if (isObj(part) && typeof part.text === 'string') out += part.text; // text | input_text | output_text
  }
  return out;
}

function positiveInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : null;
}

function chatToolChoice(tc: unknown): SimToolChoice {
  if (tc === 'none') return { kind: 'none' };
  if (tc === 'required') return { kind: 'required' };
  if (isObj(tc) && tc.type === 'function') {
    const name = isObj(tc.function) ? tc.function.name : tc.name; // chat nests, responses is flat
    if (typeof name === 'string') return { kind: 'named', name };
  }
  if (isObj(tc) && tc.type === 'allowed_tools') {
    const mode = isObj(tc.allowed_tools) ? tc.allowed_tools.mode : tc.mode;
    if (mode === 'required') return { kind: 'required' };
  }
  return { kind: 'auto' };
}

function toolsOf(tools: unknown): SimTool[] {
  if (!Array.isArray(tools)) return [];
  const out: SimTool[] = [];
  for (const t of tools) {
    if (!isObj(t)) continue;
    const fn = isObj(t.function) ? t.function : t; // chat nests under `function`, responses is flat
    if (typeof fn.name === 'string') out.push({ name: fn.name, parameters: fn.parameters });
  }
  return out;
}

function responseFormatOf(rf: unknown): SimResponseFormat {
  if (!isObj(rf)) return null;
  if (rf.type === 'json_object') return { type: 'json_object' };
  if (rf.type === 'json_schema') {
    // chat: {type, json_schema:{name, schema}}; responses text.format: {type, name, schema}
    const schema = isObj(rf.json_schema) ? rf.json_schema.schema : rf.schema;
    return { type: 'json_schema', schema };
  }
  return null;
}

/** vLLM's `structured_outputs: {grammar}` or `{regex}` (the `guided_*` fields it replaced are ignored, as vLLM ≥ 0.12 does). */
function structuredOutputsGrammar(value: unknown): SimGrammar | null {
  if (!isObj(value)) return null;
  if (typeof value.grammar === 'string') return { syntax: 'lark', definition: value.grammar };
  if (typeof value.regex === 'string') return { syntax: 'regex', definition: value.regex };
  return null;
}

/** Normalises a `/v1/chat/completions` body, or returns an error message (→ 400). */
export function chatRequestToSim(body: Json, defaultModel: string): SimRequest | string {
  if (!isObj(body)) return 'Request body must be a JSON object';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: Field required (a non-empty array)';
  const messages: SimMessage[] = [];
  for (const m of body.messages) {
    if (!isObj(m) || typeof m.role !== 'string') return 'messages: each message needs a string role';
    messages.push({ role: m.role, text: contentText(m.content) });
  }
  return {
    dialect: 'chat',
    model: typeof body.model === 'string' ? body.model : defaultModel,
    stream: body.stream === true,
    includeUsage: body.stream === true && isObj(body.stream_options) && body.stream_options.include_usage === true,
    messages,
    tools: toolsOf(body.tools),
    toolChoice: chatToolChoice(body.tool_choice),
    responseFormat: responseFormatOf(body.response_format),
    reasoningEffort: typeof body.reasoning_effort === 'string' ? body.reasoning_effort : null,
    maxTokens: positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens),
    stop: typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop.filter((s: unknown): s is string => typeof s === 'string' && s.length > 0) : [],
    grammar: structuredOutputsGrammar(body.structured_outputs),
  };
}

const ASSISTANT_SIDE = new Set(['function_call', 'reasoning', 'assistant_message']);

function responsesItemKind(item: Json): string {
  if (!isObj(item)) return 'other';
  const type = item.type ?? (typeof item.role === 'string' ? 'message' : undefined);
  if (type === 'message') return item.role === 'assistant' ? 'assistant_message' : 'message';
  return typeof type === 'string' ? type : 'other';
}

/**
 * Normalises a vLLM-style `/v1/responses` body, or returns an error message (→ 400).
 * Assistant-side items are grouped into turns the way a Chat conversation would be: a
 * `function_call` joins the assistant message or calls directly before it, a `reasoning` item
 * joins whatever follows it; every turn becomes one `assistant` message.
 */
export function responsesRequestToSim(body: Json, defaultModel: string): SimRequest | string {
  if (!isObj(body)) return 'Request body must be a JSON object';
  const messages: SimMessage[] = [];
  if (typeof body.instructions === 'string' && body.instructions) messages.push({ role: 'system', text: body.instructions });
  if (typeof body.input === 'string') {
    messages.push({ role: 'user', text: body.input });
  } else if (Array.isArray(body.input)) {
    let prevKind = 'none';
    for (const item of body.input) {
      const kind = responsesItemKind(item);
      if (kind === 'message') {
        messages.push({ role: String(item.role), text: contentText(item.content) });
      } else if (kind === 'function_call_output') {
        messages.push({ role: 'tool', text: typeof item.output === 'string' ? item.output : contentText(item.output) });
      } else if (ASSISTANT_SIDE.has(kind)) {
        const joins =
          ASSISTANT_SIDE.has(prevKind) && (prevKind === 'reasoning' || kind === 'function_call') && messages.length > 0;
        const text = kind === 'assistant_message' ? contentText(item.content) : '';
        if (joins) messages[messages.length - 1]!.text += text;
        else messages.push({ role: 'assistant', text });
      } else {
        continue; // item_reference and friends: ignored, and they do not break a turn
      }
      prevKind = kind;
    }
  } else {
    return 'input: Field required (a string or an array of items)';
  }
  const text = isObj(body.text) ? body.text : {};
  const reasoning = isObj(body.reasoning) ? body.reasoning : {};
  return {
    dialect: 'responses',
    model: typeof body.model === 'string' ? body.model : defaultModel,
    stream: body.stream === true,
    includeUsage: true, // response.completed always carries usage
    messages,
    tools: toolsOf(body.tools),
    toolChoice: chatToolChoice(body.tool_choice),
    responseFormat: responseFormatOf(text.format),
    reasoningEffort: typeof reasoning.effort === 'string' ? reasoning.effort : null,
    maxTokens: positiveInt(body.max_output_tokens),
    stop: [],
    grammar: structuredOutputsGrammar(body.structured_outputs),
  };
}

// ---------------------------------------------------------------------------------------------
// Script discovery and parsing

const SCRIPT_ROLES = new Set(['system', 'developer', 'user']);
const SIM_LINE = /^[ \t]*#sim (.*)$/gm;

/** The JSON source of the conversation's script: the last `#sim ` line of any system/developer/user message. */
export function findScriptSource(messages: SimMessage[]): string | null {
  let found: string | null = null;
  for (const m of messages) {
    if (!SCRIPT_ROLES.has(m.role) || !m.text.includes('#sim ')) continue;
    for (const match of m.text.matchAll(SIM_LINE)) found = match[1]!.trim();
  }
  return found;
}

/** Removes `#sim` lines, so the default behaviour does not echo the script. */
export function stripScriptLines(text: string): string {
  return text.includes('#sim ') ? text.replace(SIM_LINE, '').trim() : text.trim();
}

const STEP_KEYS = new Set([
  'text', 'reasoning', 'reasoning_field', 'refusal', 'tool_calls', 'chunks', 'chunk_size', 'tool_call_style',
  'finish_reason', 'usage', 'status', 'error', 'fail_times', 'hang', 'hang_after_chunks', 'close_after_chunks',
  'error_after_chunks', 'delay_ms', 'first_delay_ms', 'empty_deltas',
]);

function checkStep(step: unknown, i: number): string | null {
  const at = `rounds[${i}]`;
  if (!isObj(step)) return `${at} must be an object`;
  for (const k of Object.keys(step)) if (!STEP_KEYS.has(k)) return `${at}: unknown field "${k}"`;
  for (const k of ['text', 'reasoning', 'refusal', 'error'] as const) {
    if (step[k] !== undefined && typeof step[k] !== 'string') return `${at}.${k} must be a string`;
  }
  for (const k of ['chunks', 'chunk_size', 'status', 'fail_times', 'hang_after_chunks', 'close_after_chunks',
    'error_after_chunks', 'delay_ms', 'first_delay_ms'] as const) {
    const v = step[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) return `${at}.${k} must be a number >= 0`;
  }
  if (step.reasoning_field !== undefined && step.reasoning_field !== 'reasoning' && step.reasoning_field !== 'reasoning_content') {
    return `${at}.reasoning_field must be "reasoning" or "reasoning_content"`;
  }
  if (step.tool_call_style !== undefined && !['vllm', 'whole', 'interleaved'].includes(step.tool_call_style)) {
    return `${at}.tool_call_style must be "vllm", "whole" or "interleaved"`;
  }
  if (step.finish_reason !== undefined && !['stop', 'length', 'tool_calls', 'content_filter'].includes(step.finish_reason)) {
    return `${at}.finish_reason must be stop, length, tool_calls or content_filter`;
  }
  if (step.usage !== undefined && !isObj(step.usage)) return `${at}.usage must be an object`;
  if (step.tool_calls !== undefined) {
    if (!Array.isArray(step.tool_calls)) return `${at}.tool_calls must be an array`;
    for (const [j, c] of step.tool_calls.entries()) {
      if (!isObj(c) || typeof c.name !== 'string') return `${at}.tool_calls[${j}].name must be a string`;
      if (c.id !== undefined && typeof c.id !== 'string') return `${at}.tool_calls[${j}].id must be a string`;
    }
  }
  return null;
}

/** Parses and checks a script's JSON; returns an error message when it is not a valid script. */
export function parseScript(source: string): Script | string {
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (e) {
    return `invalid #sim script: ${(e as Error).message}`;
  }
  if (!isObj(raw) || !Array.isArray(raw.rounds)) return 'invalid #sim script: expected {"rounds": [...]}';
  for (const [i, step] of raw.rounds.entries()) {
    const problem = checkStep(step, i);
    if (problem) return `invalid #sim script: ${problem}`;
  }
  return { rounds: raw.rounds as ScriptStep[], repeat_last: raw.repeat_last === true };
}

/** Round index = assistant messages after the last user message (all of them if there is none). */
export function roundIndexOf(messages: SimMessage[]): number {
  let n = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const role = messages[i]!.role;
    if (role === 'user') break;
    if (role === 'assistant') n++;
  }
  return n;
}

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
    } else if (roundIndex < script.rounds.length) {
      step = script.rounds[roundIndex]!;
    } else if (script.repeat_last && script.rounds.length > 0) {
      step = script.rounds[script.rounds.length - 1]!;
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
