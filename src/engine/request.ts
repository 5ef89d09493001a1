import { invalidRequest } from '../errors.js';
import { ENGINE_ITEM_VALIDATORS } from '../protocol/input-items.js';
import { InvalidItemError } from '../protocol/item-validation.js';
import { ID_PREFIX, type InputItem, type JsonObject, type TextConfig, type TextFormat } from '../protocol/responses.js';
import { madeOnce } from '../util/freeze.js';
import { KeptRuns, mapWithKeptRun, TURNS_LOOKBACK } from '../util/kept-runs.js';
import { newId } from '../util/ids.js';
import { parseTools, toolItemValidator, type ParsedTool } from '../tools/registry.js';
import { ToolDeclarationError } from '../tools/types.js';
import { isPlainObject } from '../tools/validate.js';

/** A validated `POST /v1/responses` body; unknown top-level keys are tolerated and ignored. */
export interface CreateRequest {
  model: string;
  input: InputItem[];
  instructions: string | null;
  tools: ParsedTool[];
  toolChoice: unknown;
  parallelToolCalls: boolean;
  maxToolCalls: number | null;
  maxOutputTokens: number | null;
  temperature: number | null;
  topP: number | null;
  store: boolean;
  stream: boolean;
  background: boolean;
  previousResponseId: string | null;
  /** `conversation` (a string or `{id}`): its items are prepended, the turn appended. */
  conversationId: string | null;
  text: TextConfig;
  reasoning: { effort: string | null; summary: string | null } | null;
  truncation: 'auto' | 'disabled';
  metadata: Record<string, string>;
  include: string[];
  user: string | null;
  safetyIdentifier: string | null;
  promptCacheKey: string | null;
  serviceTier: string;
  topLogprobs: number;
  presencePenalty: number;
  frequencyPenalty: number;
}

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);

export function parseCreateRequest(body: unknown): CreateRequest {
  if (!isPlainObject(body)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
  const model = body.model;
  if (model === undefined || model === null) throw invalidRequest("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  if (typeof model !== 'string' || model.length === 0) throw invalidRequest("Invalid type for 'model': expected a non-empty string.", 'model', 'invalid_type');

  const stream = optBool(body, 'stream') ?? false;
  const store = optBool(body, 'store') ?? true;
  const background = optBool(body, 'background') ?? false;
  if (background && !store) throw invalidRequest("Background responses must be stored: 'background: true' requires 'store: true'.", 'background', 'invalid_value');

  let tools: ParsedTool[];
  try {
    tools = parseTools(body.tools);
  } catch (err) {
    if (err instanceof ToolDeclarationError) throw invalidRequest(err.message, err.param, err.code);
    throw err;
  }

  const previousResponseId = optString(body, 'previous_response_id');
  const conversationId = parseConversation(body.conversation);
  if (conversationId !== null && previousResponseId) {
    throw invalidRequest("'previous_response_id' and 'conversation' cannot be used together.", 'conversation', 'invalid_value');
  }

  const temperature = optNumber(body, 'temperature', 0, 2);
  const topP = optNumber(body, 'top_p', 0, 1);
  const maxOutputTokens = optInteger(body, 'max_output_tokens', 1);
  const maxToolCalls = optInteger(body, 'max_tool_calls', 0);
  const topLogprobs = optInteger(body, 'top_logprobs', 0, 20) ?? 0;
  const input = parseInput(body.input);
  // with nothing to continue from, there must be something to answer: the model is not asked about nothing
  if (input.length === 0 && previousResponseId === null && conversationId === null) {
    throw invalidRequest("Missing required parameter: 'input' (or 'previous_response_id' / 'conversation' to continue from).", 'input', 'missing_required_parameter');
  }

  return {
    model,
    input,
    instructions: parseInstructions(body.instructions),
    tools,
    toolChoice: body.tool_choice ?? 'auto',
    parallelToolCalls: optBool(body, 'parallel_tool_calls') ?? true,
    maxToolCalls,
    maxOutputTokens,
    temperature,
    topP,
    store,
    stream,
    background,
    previousResponseId,
    conversationId,
    text: parseText(body.text),
    reasoning: parseReasoning(body.reasoning),
    truncation: parseTruncation(body.truncation),
    metadata: parseMetadata(body.metadata),
    include: parseInclude(body.include),
    user: optString(body, 'user'),
    safetyIdentifier: optString(body, 'safety_identifier'),
    promptCacheKey: optString(body, 'prompt_cache_key'),
    serviceTier: optString(body, 'service_tier') ?? 'default',
    topLogprobs,
    presencePenalty: optNumber(body, 'presence_penalty', -2, 2) ?? 0,
    frequencyPenalty: optNumber(body, 'frequency_penalty', -2, 2) ?? 0,
  };
}

function parseInput(input: unknown): InputItem[] {
  if (input === undefined || input === null || input === '') return [];
  // as stored (`normalizeStoredItem` takes it as it is): its id and status are the ones it would mint
  if (typeof input === 'string') return [{ id: newId(ID_PREFIX.message), type: 'message', role: 'user', content: [{ type: 'input_text', text: input }], status: 'completed' }];
  if (!Array.isArray(input)) throw invalidRequest("Invalid type for 'input': expected a string or an array of items.", 'input', 'invalid_type');
  try {
    return mapWithKeptRun(checkedRuns, input, checkedOnce);
  } catch (err) {
    throw asInvalidRequest(err);
  }
}

/**
 * The checked items of a history a client resends whole, by the items as parsed: those are frozen
 * and the same objects every request (`util/interned-prefix.ts`), and an item's check depends on
 * nothing else, so each is checked once and answered as the same frozen item every time.
 */
const checkedItems = new WeakMap<object, InputItem>();
/** The checked items of a resent history's leading shared items, as a run (a few turns looked back). */
const checkedRuns = new KeptRuns<readonly InputItem[]>(TURNS_LOOKBACK);

/** `input[index]` checked (once for a frozen item: its place is named only when it is checked). */
function checkedOnce(item: unknown, index: number): InputItem {
  return typeof item === 'object' && item !== null ? madeOnce(checkedItems, item, checkInputItem, index) : checkInputItem(item, index);
}

function checkInputItem(item: unknown, index: number): InputItem {
  return checkItem(item, `input[${index}]`);
}

/**
 * One item a client sends (`input[n]`, a conversation's `items[n]`), checked by the validator of its
 * type — the engine's own (message, reasoning, compaction, item_reference) or its tool type's —
 * and answered as the protocol's typed item. A 400 names the offending field.
 */
export function validateInputItem(item: unknown, param: string): InputItem {
  try {
    return checkItem(item, param);
  } catch (err) {
    throw asInvalidRequest(err);
  }
}

function checkItem(item: unknown, param: string): InputItem {
  if (!isPlainObject(item)) throw new InvalidItemError(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  if (typeof type !== 'string') throw new InvalidItemError(`Missing required parameter: '${param}.type'.`, `${param}.type`, 'missing_required_parameter');
  // an id names the item in storage and streams: a string, or absent (then minted)
  if (item.id !== undefined && item.id !== null && typeof item.id !== 'string') throw new InvalidItemError(`Invalid type for '${param}.id': expected a string.`, `${param}.id`, 'invalid_type');
  const validate = ENGINE_ITEM_VALIDATORS.get(type) ?? toolItemValidator(type);
  if (!validate) throw new InvalidItemError(`Invalid value: '${type}'. Unknown item type at '${param}.type'.`, `${param}.type`, 'invalid_value');
  return validate(item, param);
}

function asInvalidRequest(err: unknown): unknown {
  return err instanceof InvalidItemError ? invalidRequest(err.message, err.param, err.code) : err;
}

function parseConversation(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && value.length > 0) return value;
  if (isPlainObject(value) && typeof value.id === 'string' && value.id.length > 0) return value.id;
  throw invalidRequest("Invalid 'conversation': expected a conversation id or an object with an 'id'.", 'conversation', 'invalid_type');
}

function parseInstructions(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalidRequest("Invalid type for 'instructions': expected a string.", 'instructions', 'invalid_type');
  return value;
}

function parseText(value: unknown): TextConfig {
  if (value === undefined || value === null) return { format: { type: 'text' }, verbosity: 'medium' };
  if (!isPlainObject(value)) throw invalidRequest("Invalid type for 'text': expected an object.", 'text', 'invalid_type');
  const verbosity = value.verbosity ?? 'medium';
  if (verbosity !== 'low' && verbosity !== 'medium' && verbosity !== 'high') throw invalidRequest("Invalid value for 'text.verbosity'.", 'text.verbosity', 'invalid_value');
  return { format: parseTextFormat(value.format), verbosity };
}

function parseTextFormat(value: unknown): TextFormat {
  if (value === undefined || value === null) return { type: 'text' };
  if (!isPlainObject(value)) throw invalidRequest("Invalid type for 'text.format': expected an object.", 'text.format', 'invalid_type');
  switch (value.type) {
    case 'text':
    case 'json_object':
      return { ...value, type: value.type };
    case 'json_schema': {
      const { name, schema, strict, description } = value;
      if (typeof name !== 'string' || name.length === 0) throw invalidRequest("Missing required parameter: 'text.format.name'.", 'text.format.name', 'missing_required_parameter');
      if (!isPlainObject(schema)) throw invalidRequest("Missing required parameter: 'text.format.schema'.", 'text.format.schema', 'missing_required_parameter');
      return {
        ...value,
        type: 'json_schema',
        name,
        schema,
        strict: typeof strict === 'boolean' ? strict : null,
        description: typeof description === 'string' ? description : null,
      };
    }
    default:
      throw invalidRequest("Invalid value for 'text.format.type': expected 'text', 'json_object' or 'json_schema'.", 'text.format.type', 'invalid_value');
  }
}

function parseReasoning(value: unknown): CreateRequest['reasoning'] {
  if (value === undefined || value === null) return { effort: null, summary: null };
  if (!isPlainObject(value)) throw invalidRequest("Invalid type for 'reasoning': expected an object.", 'reasoning', 'invalid_type');
  const effort = value.effort ?? null;
  if (effort !== null && (typeof effort !== 'string' || !EFFORTS.has(effort))) throw invalidRequest("Invalid value for 'reasoning.effort'.", 'reasoning.effort', 'invalid_value');
  const summary = value.summary ?? value.generate_summary ?? null;
  if (summary !== null && summary !== 'auto' && summary !== 'concise' && summary !== 'detailed') throw invalidRequest("Invalid value for 'reasoning.summary'.", 'reasoning.summary', 'invalid_value');
  return { effort: effort as string | null, summary: summary as string | null };
}

function parseTruncation(value: unknown): 'auto' | 'disabled' {
  if (value === undefined || value === null) return 'disabled';
  if (value !== 'auto' && value !== 'disabled') throw invalidRequest("Invalid value for 'truncation': expected 'auto' or 'disabled'.", 'truncation', 'invalid_value');
  return value;
}

/** `metadata`: at most 16 pairs, keys ≤ 64 characters, string values ≤ 512 (responses and conversations). */
export function parseMetadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw invalidRequest("Invalid type for 'metadata': expected an object.", 'metadata', 'invalid_type');
  const entries = Object.entries(value);
  if (entries.length > 16) throw invalidRequest("Invalid 'metadata': at most 16 key-value pairs.", 'metadata', 'invalid_value');
  for (const [key, v] of entries) {
    if (key.length > 64) throw invalidRequest(`Invalid 'metadata': key '${key.slice(0, 20)}…' is longer than 64 characters.`, `metadata.${key}`, 'invalid_value');
    if (typeof v !== 'string' || v.length > 512) throw invalidRequest(`Invalid 'metadata.${key}': values must be strings of at most 512 characters.`, `metadata.${key}`, 'invalid_value');
  }
  return value as Record<string, string>;
}

function parseInclude(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw invalidRequest("Invalid type for 'include': expected an array of strings.", 'include', 'invalid_type');
  return value as string[];
}

function optBool(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`Invalid type for '${key}': expected a boolean, but got a ${typeof v} instead.`, key, 'invalid_type');
  return v;
}

function optString(body: JsonObject, key: string): string | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw invalidRequest(`Invalid type for '${key}': expected a string, but got a ${typeof v} instead.`, key, 'invalid_type');
  return v;
}

function optNumber(body: JsonObject, key: string, min: number, max: number): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidRequest(`Invalid type for '${key}': expected a number, but got a ${typeof v} instead.`, key, 'invalid_type');
  if (v < min || v > max) throw invalidRequest(`Invalid '${key}': ${v}. Expected a value between ${min} and ${max}.`, key, 'invalid_value');
  return v;
}

function optInteger(body: JsonObject, key: string, min: number, max = Number.MAX_SAFE_INTEGER): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidRequest(`Invalid type for '${key}': expected an integer, but got ${JSON.stringify(v)} instead.`, key, 'invalid_type');
  if (v < min) throw invalidRequest(`Invalid '${key}': integer below minimum value. Expected a value >= ${min}, but got ${v} instead.`, key, 'integer_below_min_value');
  if (v > max) throw invalidRequest(`Invalid '${key}': integer above maximum value. Expected a value <= ${max}, but got ${v} instead.`, key, 'integer_above_max_value');
  return v;
}
