import type { SimGrammar } from './grammar-output.js';
import { isObj, type Json, type SimMessage, type SimRequest, type SimResponseFormat, type SimTool, type SimToolChoice } from './script-types.js';

// ---------------------------------------------------------------------------------------------
// Request normalisation


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

/** vLLM's `structured_outputs: {grammar}` or `{regex}` (the `guided_*` fields it replaced are ignored, as vLLM ≥ 0.12 does). */
function structuredOutputsGrammar(value: unknown): SimGrammar | null {
  if (!isObj(value)) return null;
  if (typeof value.grammar === 'string') return { syntax: 'lark', definition: value.grammar };
  if (typeof value.regex === 'string') return { syntax: 'regex', definition: value.regex };
  return null;
}
