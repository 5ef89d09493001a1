import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { isPlainObject } from '../tools/validate.js';

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

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const SERVER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** JSON-Schema meta keywords some upstreams (and strict grammars) reject; they carry no meaning for the model. */
const SCHEMA_META_KEYS = new Set(['$schema', '$id', '$comment']);
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

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

// ---------- system and messages ----------

function decodeSystem(system: unknown): string | null {
  if (system === undefined || system === null) return null;
  if (typeof system === 'string') return system.length > 0 ? system : null;
  if (!Array.isArray(system)) throw invalidRequest('system: Input should be a string or a list of text blocks.', 'system', 'invalid_type');
  const texts = system.map((block: unknown, i) => {
    if (!isPlainObject(block) || block.type !== 'text' || typeof block.text !== 'string') throw invalidRequest(`system.${i}: Input should be a text block.`, `system[${i}]`, 'invalid_type');
    return block.text;
  });
  return texts.length > 0 ? texts.join('\n\n') : null;
}

interface Turn {
  role: 'user' | 'assistant';
  /** The `messages[i]` index of each block, for errors. */
  blocks: Array<{ block: JsonObject; param: string }>;
}

function decodeMessages(messages: unknown, ignored: string[]): JsonObject[] {
  if (!Array.isArray(messages)) throw invalidRequest('messages: Field required (a list of messages).', 'messages', 'missing_required_parameter');
  if (messages.length === 0) throw invalidRequest('messages: at least one message is required.', 'messages', 'invalid_value');
  const items: JsonObject[] = [];
  // consecutive messages of one role are one turn, as Anthropic's API merges them
  const turns: Turn[] = [];
  messages.forEach((message: unknown, i) => {
    const param = `messages[${i}]`;
    if (!isPlainObject(message)) throw invalidRequest(`${param}: Input should be an object.`, param, 'invalid_type');
    const role = message.role;
    if (role !== 'user' && role !== 'assistant' && role !== 'system') throw invalidRequest(`${param}.role: Input should be 'user', 'assistant' or 'system'.`, `${param}.role`, 'invalid_value');
    const content = message.content;
    let blocks: JsonObject[];
    if (typeof content === 'string') blocks = [{ type: 'text', text: content }];
    else if (Array.isArray(content)) {
      blocks = content.map((block: unknown, j) => {
        if (!isPlainObject(block) || typeof block.type !== 'string') throw invalidRequest(`${param}.content[${j}]: Input should be a content block with a 'type'.`, `${param}.content[${j}]`, 'invalid_type');
        return block;
      });
    } else throw invalidRequest(`${param}.content: Input should be a string or a list of content blocks.`, `${param}.content`, 'invalid_type');
    if (role === 'system') {
      // SDK 1.x types system-role messages; they are instructions at that point of the conversation
      items.push({ type: 'message', role: 'system', content: [{ type: 'input_text', text: blocks.map((b, j) => textOf(b, `${param}.content[${j}]`)).join('\n\n') }] });
      return;
    }
    const last = turns.at(-1);
    const withParams = blocks.map((block, j) => ({ block, param: `${param}.content[${j}]` }));
    if (last && last.role === role) last.blocks.push(...withParams);
    else turns.push({ role, blocks: withParams });
    items.push(...(role === 'user' ? decodeUserBlocks(withParams, ignored) : decodeAssistantBlocks(withParams, ignored)));
  });
  checkToolPairing(turns);
  return items;
}

/**
 * Every client `tool_use` is answered by a `tool_result` with its id in the next turn, once;
 * every `tool_result` answers a `tool_use` of the turn just before (reference §2, ordering rules).
 */
function checkToolPairing(turns: Turn[]): void {
  const seen = new Set<string>();
  turns.forEach((turn, t) => {
    if (turn.role !== 'assistant') return;
    const pending = new Map<string, string>();
    for (const { block, param } of turn.blocks) {
      if (block.type !== 'tool_use') continue;
      const id = block.id as string;
      if (seen.has(id)) throw invalidRequest(`${param}: \`tool_use\` ids must be unique; '${id}' appears more than once.`, param, 'invalid_value');
      seen.add(id);
      pending.set(id, param);
    }
    const next = turns[t + 1];
    const answered = new Set<string>();
    for (const { block, param } of next?.blocks ?? []) {
      if (block.type !== 'tool_result') continue;
      const id = block.tool_use_id as string;
      if (answered.has(id)) throw invalidRequest(`${param}: duplicate \`tool_result\` for tool_use_id '${id}'.`, param, 'invalid_value');
      answered.add(id);
    }
    const missing = [...pending.keys()].filter((id) => !answered.has(id));
    if (missing.length > 0) {
      const param = pending.get(missing[0])!;
      throw invalidRequest(`${param}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`, param, 'invalid_value');
    }
  });
  // a tool_result must answer a tool_use of the assistant turn right before it
  turns.forEach((turn, t) => {
    if (turn.role !== 'user') return;
    const previous = turns[t - 1];
    const ids = new Set((previous?.role === 'assistant' ? previous.blocks : []).filter(({ block }) => block.type === 'tool_use').map(({ block }) => block.id as string));
    for (const { block, param } of turn.blocks) {
      if (block.type === 'tool_result' && !ids.has(block.tool_use_id as string)) {
        throw invalidRequest(`${param}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`, param, 'invalid_value');
      }
    }
  });
}

function decodeUserBlocks(blocks: Array<{ block: JsonObject; param: string }>, ignored: string[]): JsonObject[] {
  const items: JsonObject[] = [];
  let parts: JsonObject[] = [];
  const flush = () => {
    if (parts.length > 0) items.push({ type: 'message', role: 'user', content: parts });
    parts = [];
  };
  for (const { block, param } of blocks) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'input_text', text: textOf(block, param) });
        break;
      case 'image':
        parts.push(imagePart(block, param));
        break;
      case 'document':
        parts.push({ type: 'input_text', text: documentText(block, param) });
        break;
      case 'search_result':
        parts.push({ type: 'input_text', text: searchResultText(block) });
        break;
      case 'tool_result': {
        // results come first in their message (reference §2); any text before them keeps its place
        flush();
        const id = requireString(block, 'tool_use_id', param);
        const text = toolResultText(block.content, `${param}.content`);
        items.push({ type: 'function_call_output', call_id: id, output: block.is_error === true ? `Error: ${text}` : text });
        break;
      }
      default:
        ignored.push(`${param} (${String(block.type)})`);
    }
  }
  flush();
  return items;
}

function decodeAssistantBlocks(blocks: Array<{ block: JsonObject; param: string }>, ignored: string[]): JsonObject[] {
  const items: JsonObject[] = [];
  let parts: JsonObject[] = [];
  const flush = () => {
    if (parts.length > 0) items.push({ type: 'message', role: 'assistant', content: parts });
    parts = [];
  };
  /** Server-tool calls of this turn by id, waiting for their result block. */
  const serverCalls = new Map<string, JsonObject>();
  for (const { block, param } of blocks) {
    switch (block.type) {
      case 'text':
        parts.push({ type: 'output_text', text: textOf(block, param), annotations: [] });
        break;
      case 'thinking':
        flush();
        // replayed as reasoning: the model may see its earlier thinking (upstream.reasoningReplay)
        if (typeof block.thinking === 'string' && block.thinking) items.push({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: block.thinking }] });
        break;
      case 'redacted_thinking':
        break;
      case 'tool_use': {
        flush();
        const id = requireString(block, 'id', param);
        const name = requireString(block, 'name', param);
        items.push({ type: 'function_call', call_id: id, name, arguments: JSON.stringify(block.input ?? {}) });
        break;
      }
      case 'server_tool_use':
      case 'mcp_tool_use':
        flush();
        serverCalls.set(requireString(block, 'id', param), block);
        break;
      case 'web_search_tool_result': {
        const call = serverCalls.get(block.tool_use_id as string);
        if (!call) throw invalidRequest(`${param}: no \`server_tool_use\` block with id '${String(block.tool_use_id)}' before this result.`, param, 'invalid_value');
        serverCalls.delete(block.tool_use_id as string);
        // the earlier search, as the model saw it: a call of the web_search function and its results
        items.push({ type: 'function_call', call_id: call.id, name: String(call.name ?? 'web_search'), arguments: JSON.stringify(call.input ?? {}) });
        items.push({ type: 'function_call_output', call_id: call.id, output: webSearchResultText(block.content) });
        break;
      }
      case 'mcp_tool_result': {
        const call = serverCalls.get(block.tool_use_id as string);
        if (!call) throw invalidRequest(`${param}: no \`mcp_tool_use\` block with id '${String(block.tool_use_id)}' before this result.`, param, 'invalid_value');
        serverCalls.delete(block.tool_use_id as string);
        const text = toolResultText(block.content, `${param}.content`);
        const failed = block.is_error === true;
        items.push({
          type: 'mcp_call',
          id: call.id,
          server_label: String(call.server_name ?? ''),
          name: String(call.name ?? ''),
          arguments: JSON.stringify(call.input ?? {}),
          output: failed ? null : text,
          error: failed ? text : null,
          status: failed ? 'failed' : 'completed',
        });
        break;
      }
      default:
        ignored.push(`${param} (${String(block.type)})`);
    }
  }
  flush();
  return items;
}

function textOf(block: JsonObject, param: string): string {
  if (block.type !== 'text' || typeof block.text !== 'string') throw invalidRequest(`${param}: Input should be a text block with a string 'text'.`, param, 'invalid_type');
  return block.text;
}

function imagePart(block: JsonObject, param: string): JsonObject {
  const source = block.source;
  if (!isPlainObject(source)) throw invalidRequest(`${param}.source: Field required.`, `${param}.source`, 'missing_required_parameter');
  if (source.type === 'base64') {
    if (typeof source.media_type !== 'string' || !IMAGE_TYPES.has(source.media_type)) {
      throw invalidRequest(`${param}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'.`, `${param}.source.media_type`, 'invalid_value');
    }
    if (typeof source.data !== 'string' || source.data.length === 0) throw invalidRequest(`${param}.source.data: Field required.`, `${param}.source.data`, 'missing_required_parameter');
    return { type: 'input_image', image_url: `data:${source.media_type};base64,${source.data}`, detail: 'auto' };
  }
  if (source.type === 'url') {
    if (typeof source.url !== 'string' || !/^https?:\/\//i.test(source.url)) throw invalidRequest(`${param}.source.url: expected an http(s) URL.`, `${param}.source.url`, 'invalid_value');
    return { type: 'input_image', image_url: source.url, detail: 'auto' };
  }
  throw invalidRequest(`${param}.source.type: '${String(source.type)}' is not supported by this gateway (use 'base64' or 'url').`, `${param}.source.type`, 'invalid_value');
}

/** Documents the model can read as text; a PDF (or a file reference) cannot be read here: a clear 400. */
function documentText(block: JsonObject, param: string): string {
  const source = block.source;
  if (!isPlainObject(source)) throw invalidRequest(`${param}.source: Field required.`, `${param}.source`, 'missing_required_parameter');
  let text: string;
  if (source.type === 'text' && typeof source.data === 'string') text = source.data;
  else if (source.type === 'content') text = toolResultText(source.content, `${param}.source.content`);
  else if (source.type === 'base64' && typeof source.data === 'string' && typeof source.media_type === 'string' && source.media_type.startsWith('text/')) text = Buffer.from(source.data, 'base64').toString('utf8');
  else {
    throw invalidRequest(
      `${param}.source: this gateway reads documents as text only ('text' or 'content' sources, or base64 'text/*'); a ${String(source.media_type ?? source.type)} document cannot be read — extract its text and send it as a text document.`,
      `${param}.source`,
      'invalid_value',
    );
  }
  const title = typeof block.title === 'string' && block.title ? `Document: ${block.title}\n` : '';
  const context = typeof block.context === 'string' && block.context ? `Context: ${block.context}\n` : '';
  return title || context ? `${title}${context}\n${text}` : text;
}

function searchResultText(block: JsonObject): string {
  const lines = [`Search result: ${String(block.title ?? '')}`, `Source: ${String(block.source ?? '')}`];
  if (Array.isArray(block.content)) for (const part of block.content) if (isPlainObject(part) && typeof part.text === 'string') lines.push(part.text);
  return lines.join('\n');
}

/** A `tool_result` (or MCP result) content: a string, or text/image/document blocks flattened to text. */
function toolResultText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidRequest(`${param}: Input should be a string or a list of content blocks.`, param, 'invalid_type');
  return content
    .map((block: unknown, i) => {
      if (!isPlainObject(block)) throw invalidRequest(`${param}[${i}]: Input should be a content block.`, `${param}[${i}]`, 'invalid_type');
      if (block.type === 'text') return textOf(block, `${param}[${i}]`);
      if (block.type === 'image') return '[image]';
      if (block.type === 'document') return documentText(block, `${param}[${i}]`);
      if (block.type === 'search_result') return searchResultText(block);
      return '';
    })
    .join('\n');
}

/** An earlier `web_search_tool_result`, as the model is shown search results: numbered sources. */
function webSearchResultText(content: unknown): string {
  if (!Array.isArray(content)) {
    const code = isPlainObject(content) ? String(content.error_code ?? 'unavailable') : 'unavailable';
    return `Error: the search failed (${code}).`;
  }
  const results = content.filter(isPlainObject);
  if (results.length === 0) return 'No results.';
  return results.map((r, i) => `[${i + 1}] ${String(r.title ?? r.url)}\nURL: ${String(r.url)}`).join('\n\n');
}

// ---------- tools ----------

interface DecodedTools {
  declarations: JsonObject[];
  clientNames: Set<string>;
  webSearchName: string | null;
  maxUses: number | null;
}

function decodeTools(tools: unknown, mcpServers: unknown, ignored: string[]): DecodedTools {
  const out: DecodedTools = { declarations: [], clientNames: new Set(), webSearchName: null, maxUses: null };
  if (tools !== undefined && tools !== null && !Array.isArray(tools)) throw invalidRequest('tools: Input should be a list of tools.', 'tools', 'invalid_type');
  /** `mcp_toolset` entries (mcp-client-2025-11-20) by server name. */
  const toolsets = new Map<string, { decl: JsonObject; param: string }>();
  (tools ?? []).forEach((tool: unknown, i: number) => {
    const param = `tools[${i}]`;
    if (!isPlainObject(tool)) throw invalidRequest(`${param}: Input should be a tool object.`, param, 'invalid_type');
    const type = tool.type;
    if (type === undefined || type === null || type === 'custom') {
      const name = requireString(tool, 'name', param);
      if (!TOOL_NAME.test(name)) throw invalidRequest(`${param}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'.`, `${param}.name`, 'invalid_value');
      if (out.clientNames.has(name)) throw invalidRequest(`${param}.name: tool names must be unique; '${name}' is declared twice.`, `${param}.name`, 'invalid_value');
      if (!isPlainObject(tool.input_schema)) throw invalidRequest(`${param}.input_schema: Field required (a JSON Schema object).`, `${param}.input_schema`, 'missing_required_parameter');
      out.clientNames.add(name);
      out.declarations.push({
        type: 'function',
        name,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: { type: 'object', ...stripSchemaMeta(tool.input_schema) },
        ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
        // shown to the model only once a tool search loads it; without one, never (and never a 400)
        ...(tool.defer_loading === true ? { defer_loading: true } : {}),
      });
      return;
    }
    if (typeof type !== 'string') throw invalidRequest(`${param}.type: Input should be a string.`, `${param}.type`, 'invalid_type');
    if (/^web_search_\d{8}$/.test(type)) {
      out.webSearchName = typeof tool.name === 'string' ? tool.name : 'web_search';
      out.declarations.push(webSearchDeclaration(tool, param, ignored));
      if (typeof tool.max_uses === 'number' && Number.isInteger(tool.max_uses) && tool.max_uses > 0) out.maxUses = tool.max_uses;
      return;
    }
    if (type === 'mcp_toolset') {
      const server = requireString(tool, 'mcp_server_name', param);
      toolsets.set(server, { decl: tool, param });
      return;
    }
    // server tools the gateway cannot run (code execution, web fetch, …) and provider-defined
    // client tools without a schema here: not shown to the model, never a 400 (issue part 6)
    ignored.push(`${param} (${type})`);
  });
  if (mcpServers !== undefined && mcpServers !== null) {
    if (!Array.isArray(mcpServers)) throw invalidRequest('mcp_servers: Input should be a list of servers.', 'mcp_servers', 'invalid_type');
    const names = new Set<string>();
    mcpServers.forEach((server: unknown, i) => {
      const param = `mcp_servers[${i}]`;
      if (!isPlainObject(server)) throw invalidRequest(`${param}: Input should be an object.`, param, 'invalid_type');
      const name = requireString(server, 'name', param);
      if (!SERVER_NAME.test(name)) throw invalidRequest(`${param}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'.`, `${param}.name`, 'invalid_value');
      if (names.has(name)) throw invalidRequest(`${param}.name: MCP server names must be unique; '${name}' is declared twice.`, `${param}.name`, 'invalid_value');
      names.add(name);
      const url = requireString(server, 'url', param);
      const declaration: JsonObject = { type: 'mcp', server_label: name, server_url: url, require_approval: 'never' };
      if (typeof server.authorization_token === 'string') declaration.authorization = server.authorization_token;
      const config = isPlainObject(server.tool_configuration) ? server.tool_configuration : undefined;
      if (config?.enabled === false) return;
      if (Array.isArray(config?.allowed_tools)) declaration.allowed_tools = config!.allowed_tools;
      const toolset = toolsets.get(name);
      if (toolset) {
        toolsets.delete(name);
        const selection = toolsetSelection(toolset.decl, toolset.param, ignored);
        if (selection === 'none') return;
        if (selection !== 'all') declaration.allowed_tools = selection;
      }
      out.declarations.push(declaration);
    });
  }
  for (const [name, { param }] of toolsets) throw invalidRequest(`${param}.mcp_server_name: no server named '${name}' in 'mcp_servers'.`, `${param}.mcp_server_name`, 'invalid_value');
  return out;
}

/** An `mcp_toolset`'s tool selection as an allow-list: 'all', 'none', or tool names. */
function toolsetSelection(toolset: JsonObject, param: string, ignored: string[]): 'all' | 'none' | string[] {
  const defaults = isPlainObject(toolset.default_config) ? toolset.default_config : {};
  const configs = isPlainObject(toolset.configs) ? toolset.configs : {};
  const enabledByDefault = defaults.enabled !== false;
  const enabled = Object.entries(configs).filter(([, c]) => isPlainObject(c) && c.enabled === true).map(([name]) => name);
  const disabled = Object.entries(configs).filter(([, c]) => isPlainObject(c) && c.enabled === false).map(([name]) => name);
  if (!enabledByDefault) return enabled.length > 0 ? enabled : 'none';
  // a deny-list needs the server's listing; Responses' allowed_tools is an allow-list only
  if (disabled.length > 0) ignored.push(`${param}.configs (disabled tools: ${disabled.join(', ')})`);
  return 'all';
}

function webSearchDeclaration(tool: JsonObject, param: string, ignored: string[]): JsonObject {
  const declaration: JsonObject = { type: 'web_search' };
  const allowed = tool.allowed_domains;
  const blocked = tool.blocked_domains;
  if (Array.isArray(allowed) && Array.isArray(blocked) && allowed.length > 0 && blocked.length > 0) {
    throw invalidRequest(`${param}: 'allowed_domains' and 'blocked_domains' cannot be used together.`, param, 'invalid_value');
  }
  if (allowed !== undefined && allowed !== null) {
    if (!Array.isArray(allowed) || allowed.some((d) => typeof d !== 'string')) throw invalidRequest(`${param}.allowed_domains: Input should be a list of strings.`, `${param}.allowed_domains`, 'invalid_type');
    if (allowed.length > 0) declaration.filters = { allowed_domains: allowed };
  }
  if (Array.isArray(blocked) && blocked.length > 0) ignored.push(`${param}.blocked_domains (not enforced by this gateway)`);
  const location = tool.user_location;
  if (isPlainObject(location)) {
    const { type: _type, ...rest } = location;
    declaration.user_location = { type: 'approximate', ...rest };
  }
  return declaration;
}

/** Drops JSON-Schema meta keywords (`$schema`, …) at every level; the schema's meaning is unchanged. */
function stripSchemaMeta(schema: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_META_KEYS.has(key)) continue;
    if (isPlainObject(value)) out[key] = stripSchemaMeta(value);
    else if (Array.isArray(value)) out[key] = value.map((v) => (isPlainObject(v) ? stripSchemaMeta(v) : v));
    else out[key] = value;
  }
  return out;
}

function decodeToolChoice(choice: unknown, tools: DecodedTools): { toolChoice?: unknown; parallel?: boolean } {
  if (choice === undefined || choice === null) return {};
  if (!isPlainObject(choice)) throw invalidRequest('tool_choice: Input should be an object.', 'tool_choice', 'invalid_type');
  const parallel = choice.disable_parallel_tool_use === true ? false : undefined;
  switch (choice.type) {
    case 'auto':
      return { toolChoice: 'auto', parallel };
    case 'any':
      return { toolChoice: 'required', parallel };
    case 'none':
      return { toolChoice: 'none' };
    case 'tool': {
      const name = requireString(choice, 'name', 'tool_choice');
      if (tools.clientNames.has(name)) return { toolChoice: { type: 'function', name }, parallel };
      if (name === tools.webSearchName) return { toolChoice: { type: 'web_search' }, parallel };
      throw invalidRequest(`tool_choice.name: tool '${name}' is not among the request's tools.`, 'tool_choice.name', 'invalid_value');
    }
    default:
      throw invalidRequest("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'.", 'tool_choice.type', 'invalid_value');
  }
}

// ---------- sampling and reasoning ----------

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

function requireString(block: JsonObject, key: string, param: string): string {
  const v = block[key];
  if (typeof v !== 'string' || v.length === 0) throw invalidRequest(`${param}.${key}: Field required (a non-empty string).`, `${param}.${key}`, 'missing_required_parameter');
  return v;
}
