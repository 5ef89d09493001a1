/**
 * Upstream stream chunks checked where they are parsed: a Chat Completions chunk or a Responses
 * stream event whose fields are not what the decoders read (choices not an array, a tool call's
 * `index` not a number, `arguments` not a string …) is refused as a whole with the path of the
 * first bad field, instead of failing later, deep in the engine, as a TypeError. Only the fields
 * the decoders read are checked; everything else an upstream adds is ignored.
 */
import type { ChatChunk } from './chat.js';

/** A chunk an upstream sent whose shape the decoders cannot read; `path` names the bad field. */
export class MalformedChunkError extends Error {
  constructor(readonly path: string, expected: string) {
    super(`'${path}' is not ${expected}`);
    this.name = 'MalformedChunkError';
  }
}

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An optional field: absent, null, or of the kind `ok` accepts. */
function optional(owner: Fields, key: string, path: string, ok: (value: unknown) => boolean, expected: string): void {
  const value = owner[key];
  if (value !== undefined && value !== null && !ok(value)) throw new MalformedChunkError(path === '' ? key : `${path}.${key}`, expected);
}

/** An optional string field (the check a chunk makes most: once per field per token, so inline). */
function optionalString(owner: Fields, key: string, path: string): void {
  const value = owner[key];
  if (value !== undefined && value !== null && typeof value !== 'string') throw new MalformedChunkError(`${path}.${key}`, STRING);
}

const isString = (value: unknown) => typeof value === 'string';
const isNumber = (value: unknown) => typeof value === 'number' && Number.isFinite(value);
const isInteger = (value: unknown) => Number.isInteger(value);
const STRING = 'a string';
const NUMBER = 'a number';
const OBJECT = 'an object';
const ARRAY = 'an array';

/** A parsed `/chat/completions` stream chunk, checked (see the module comment). */
export function checkChatChunk(value: unknown): ChatChunk {
  if (!isObject(value)) throw new MalformedChunkError('(chunk)', 'a JSON object');
  // some servers send the error as its message alone
  if (value.error !== undefined) optional(value, 'error', '', (error) => isObject(error) || isString(error), 'an object or a string');
  const choices = value.choices;
  if (choices !== undefined && choices !== null && !Array.isArray(choices)) throw new MalformedChunkError('choices', ARRAY);
  const choice: unknown = (choices as unknown[] | undefined | null)?.[0];
  if (choice !== undefined) {
    if (!isObject(choice)) throw new MalformedChunkError('choices[0]', OBJECT);
    optionalString(choice, 'finish_reason', 'choices[0]');
    const delta = choice.delta;
    if (delta !== undefined && delta !== null) {
      if (!isObject(delta)) throw new MalformedChunkError('choices[0].delta', OBJECT);
      checkDelta(delta, 'choices[0].delta');
    }
  }
  const usage = value.usage;
  if (usage !== undefined && usage !== null) {
    if (!isObject(usage)) throw new MalformedChunkError('usage', OBJECT);
    optional(usage, 'prompt_tokens', 'usage', isNumber, NUMBER);
    optional(usage, 'completion_tokens', 'usage', isNumber, NUMBER);
  }
  return value as ChatChunk;
}

function checkDelta(delta: Fields, path: string): void {
  optionalString(delta, 'content', path);
  optionalString(delta, 'refusal', path);
  optionalString(delta, 'reasoning', path);
  optionalString(delta, 'reasoning_content', path);
  const calls = delta.tool_calls;
  if (calls === undefined || calls === null) return;
  if (!Array.isArray(calls)) throw new MalformedChunkError(`${path}.tool_calls`, ARRAY);
  for (let i = 0; i < calls.length; i++) {
    const call: unknown = calls[i];
    const callPath = `${path}.tool_calls[${i}]`;
    if (!isObject(call)) throw new MalformedChunkError(callPath, OBJECT);
    optional(call, 'index', callPath, isInteger, 'an integer');
    optional(call, 'id', callPath, isString, STRING);
    optional(call, 'function', callPath, isObject, OBJECT);
    const fn = call.function as Fields | undefined | null;
    if (fn) {
      optional(fn, 'name', `${callPath}.function`, isString, STRING);
      optional(fn, 'arguments', `${callPath}.function`, isString, STRING);
    }
  }
}

/** A Responses stream event as the upstream decoder reads it. */
export interface UpstreamResponsesEvent {
  type: string;
  delta?: string;
  output_index?: number;
  item?: { type?: string; call_id?: string; name?: string; arguments?: string };
  response?: {
    status?: string;
    usage?: {
      input_tokens?: number;
      output_tokens?: number;
      input_tokens_details?: { cached_tokens?: number } | null;
      output_tokens_details?: { reasoning_tokens?: number } | null;
    } | null;
    error?: { message?: string; code?: string } | null;
    incomplete_details?: { reason?: string } | null;
  };
  message?: string;
  code?: unknown;
  error?: { message?: string } | null;
}

/** A parsed `/responses` stream event, checked (see the module comment). */
export function checkResponsesEvent(value: unknown): UpstreamResponsesEvent {
  if (!isObject(value)) throw new MalformedChunkError('(event)', 'a JSON object');
  if (typeof value.type !== 'string') throw new MalformedChunkError('type', STRING);
  optional(value, 'delta', '', isString, STRING);
  optional(value, 'output_index', '', isInteger, 'an integer');
  optional(value, 'item', '', isObject, OBJECT);
  const item = value.item as Fields | undefined | null;
  if (item?.type === 'function_call') {
    if (typeof item.name !== 'string') throw new MalformedChunkError('item.name', STRING);
    for (const key of ['call_id', 'arguments']) optional(item, key, 'item', isString, STRING);
  }
  optional(value, 'response', '', isObject, OBJECT);
  const response = value.response as Fields | undefined | null;
  if (response) {
    optional(response, 'usage', 'response', isObject, OBJECT);
    optional(response, 'error', 'response', isObject, OBJECT);
    const usage = response.usage as Fields | undefined | null;
    if (usage) for (const key of ['input_tokens', 'output_tokens']) optional(usage, key, 'response.usage', isNumber, NUMBER);
  }
  optional(value, 'message', '', isString, STRING);
  optional(value, 'error', '', isObject, OBJECT);
  return value as unknown as UpstreamResponsesEvent;
}
