import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { isPlainObject } from '../tools/validate.js';
import { decodeMessages, decodeSystem } from './decode-messages.js';
import { decodeToolChoice, decodeTools, stripSchemaMeta } from './decode-tools.js';

/**
 * `POST /v1/messages` body → the engine's create request (a Responses body, `store: false`).
 * Messages is stateless: the whole conversation comes with every request, so it becomes the
 * Responses `input`, and the engine runs the turn with the same registry, scheduler and
 * executors as `/v1/responses`. Validation errors name the Messages parameter (`messages[2].content[0]`).
 */
export interface DecodedMessagesRequest {
  /** The Responses-shaped body for `Engine.prepare`. */
  body: JsonObject;
  model: string;
  stream: boolean;
  /** Sampling options the Responses body has no field for (given to the upstream directly). */
  stopSequences: string[];
  topK: number | null;
  /** What was accepted but not acted on (newer fields, tools the gateway cannot show): logged at debug. */
  ignored: string[];
}

/** Top-level fields this decoder acts on or knowingly accepts (the rest are logged and ignored). */
const KNOWN_FIELDS = new Set([
  'model', 'max_tokens', 'messages', 'system', 'tools', 'tool_choice', 'stop_sequences', 'stream', 'metadata', 'thinking', 'output_config',
  'temperature', 'top_p', 'top_k', 'mcp_servers', 'service_tier', 'cache_control', 'container', 'context_management', 'inference_geo', 'speed', 'diagnostics',
]);

export function decodeMessagesRequest(raw: unknown, options: { requireMaxTokens?: boolean } = {}): DecodedMessagesRequest {
  if (!isPlainObject(raw)) throw invalidRequest('The request body must be a JSON object.', null, 'invalid_type');
  const ignored: string[] = [];
  for (const key of Object.keys(raw)) if (!KNOWN_FIELDS.has(key)) ignored.push(key);

  const model = raw.model;
  if (typeof model !== 'string' || model.length === 0) throw invalidRequest('model: Field required (a non-empty string).', 'model', 'missing_required_parameter');
  const maxTokens = raw.max_tokens ?? (options.requireMaxTokens === false ? 1 : undefined);
  if (maxTokens === undefined || maxTokens === null) throw invalidRequest('max_tokens: Field required.', 'max_tokens', 'missing_required_parameter');
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 0) throw invalidRequest('max_tokens: Input should be a non-negative integer.', 'max_tokens', 'invalid_type');
  const stream = optionalBoolean(raw, 'stream') ?? false;

  const tools = decodeTools(raw.tools, raw.mcp_servers, ignored);
  const input = decodeMessages(raw.messages, ignored);
  const body: JsonObject = {
    model,
    input,
    store: false,
    stream,
    // `0` only warms a prompt cache on Anthropic's API; here it still asks for the smallest answer
    max_output_tokens: Math.max(1, maxTokens),
    tools: tools.declarations,
  };
  const system = decodeSystem(raw.system);
  if (system !== null) body.instructions = system;
  const choice = decodeToolChoice(raw.tool_choice, tools);
  if (choice.toolChoice !== undefined) body.tool_choice = choice.toolChoice;
  if (choice.parallel === false) body.parallel_tool_calls = false;
  if (tools.maxUses !== null) body.max_tool_calls = tools.maxUses;
  // the search results (URL, title, date) become the `web_search_tool_result` block
  if (tools.webSearchName !== null) body.include = ['web_search_call.action.sources', 'web_search_call.results'];

  const temperature = optionalNumber(raw, 'temperature', 0, 2);
  if (temperature !== null) body.temperature = temperature;
  const topP = optionalNumber(raw, 'top_p', 0, 1);
  if (topP !== null) body.top_p = topP;
  const topK = optionalNumber(raw, 'top_k', 0, Number.MAX_SAFE_INTEGER);
  const effort = decodeEffort(raw.thinking, raw.output_config);
  if (effort !== null) body.reasoning = { effort };
  const format = decodeOutputFormat(raw.output_config);
  if (format) body.text = { format };
  const metadata = raw.metadata;
  if (isPlainObject(metadata) && typeof metadata.user_id === 'string') body.user = metadata.user_id;

  return { body, model, stream, stopSequences: decodeStopSequences(raw.stop_sequences), topK: topK === null ? null : Math.floor(topK), ignored };
}

/** `thinking.budget_tokens` → a reasoning effort (open models take an effort, not a budget). */
function decodeEffort(thinking: unknown, outputConfig: unknown): string | null {
  if (isPlainObject(outputConfig) && typeof outputConfig.effort === 'string') {
    if (!['low', 'medium', 'high', 'xhigh', 'max'].includes(outputConfig.effort)) throw invalidRequest("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'.", 'output_config.effort', 'invalid_value');
    return outputConfig.effort;
  }
  if (thinking === undefined || thinking === null) return null;
  if (!isPlainObject(thinking)) throw invalidRequest('thinking: Input should be an object.', 'thinking', 'invalid_type');
  switch (thinking.type) {
    case 'enabled': {
      const budget = thinking.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1) throw invalidRequest('thinking.budget_tokens: Field required (a positive integer).', 'thinking.budget_tokens', 'missing_required_parameter');
      return budget < 4_096 ? 'low' : budget < 16_384 ? 'medium' : 'high';
    }
    case 'adaptive':
    case 'between_tools':
      return 'medium';
    case 'disabled':
      return null;
    default:
      throw invalidRequest("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'.", 'thinking.type', 'invalid_value');
  }
}

function decodeOutputFormat(outputConfig: unknown): JsonObject | null {
  if (!isPlainObject(outputConfig) || !isPlainObject(outputConfig.format)) return null;
  const format = outputConfig.format;
  if (format.type !== 'json_schema' || !isPlainObject(format.schema)) throw invalidRequest("output_config.format: expected {type: 'json_schema', schema}.", 'output_config.format', 'invalid_value');
  return { type: 'json_schema', name: 'output', schema: stripSchemaMeta(format.schema), strict: true };
}

function decodeStopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((s) => typeof s !== 'string')) throw invalidRequest('stop_sequences: Input should be a list of strings.', 'stop_sequences', 'invalid_type');
  return (value as string[]).filter((s) => s.length > 0);
}

function optionalBoolean(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidRequest(`${key}: Input should be a valid boolean.`, key, 'invalid_type');
  return v;
}

function optionalNumber(body: JsonObject, key: string, min: number, max: number): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidRequest(`${key}: Input should be a valid number.`, key, 'invalid_type');
  if (v < min || v > max) throw invalidRequest(`${key}: Input should be between ${min} and ${max}.`, key, 'invalid_value');
  return v;
}
