import { invalidRequest } from '../errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { isPlainObject } from '../tools/validate.js';
import { intern } from '../util/interned-member.js';
import { requireString } from './fields.js';

/**
 * Messages `tools`, `mcp_servers` and `tool_choice` → the engine's tool declarations: client tools
 * as functions, the server web search tool as `web_search`, MCP servers (with their `mcp_toolset`
 * selection) as `mcp` declarations the gateway runs without approvals, as Anthropic's connector does.
 */

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const SERVER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** JSON-Schema meta keywords some upstreams (and strict grammars) reject; they carry no meaning for the model. */
const SCHEMA_META_KEYS = new Set(['$schema', '$id', '$comment']);

export interface DecodedTools {
  declarations: JsonObject[];
  clientNames: Set<string>;
  webSearchName: string | null;
  maxUses: number | null;
}

/**
 * Decoded tool lists by the list a client sent, for lists that reach a request as the same frozen
 * array every time (a tool list resent byte for byte, parsed once: http/json.ts) and no MCP
 * servers: their declarations are frozen and the same every turn, so what the engine keeps of
 * them (the tools' JSON in every Response it echoes, the upstream request's tools) is found by reference.
 */
const decodedToolLists = new WeakMap<readonly unknown[], { tools: DecodedTools; ignored: readonly string[] }>();

export function decodeTools(tools: unknown, mcpServers: unknown, ignored: string[]): DecodedTools {
  const held = Array.isArray(tools) && Object.isFrozen(tools) && (mcpServers === undefined || mcpServers === null);
  const known = held ? decodedToolLists.get(tools) : undefined;
  if (known !== undefined) {
    for (const entry of known.ignored) ignored.push(entry);
    return known.tools;
  }
  const own: string[] = [];
  const decoded = decodeToolList(tools, mcpServers, own);
  for (const entry of own) ignored.push(entry);
  if (held) {
    // interned as the list they come from is (a pure function of it): what compares the
    // declarations with kept ones (the echoed list's and the upstream tools' kept JSON) meets them as kept
    intern(decoded.declarations);
    decodedToolLists.set(tools, { tools: decoded, ignored: own });
  }
  return decoded;
}

function decodeToolList(tools: unknown, mcpServers: unknown, ignored: string[]): DecodedTools {
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
      // deferred: shown to the model only once a tool search loads it, and Messages has none here,
      // so it is never shown (and never a 400)
      if (tool.defer_loading === true) return;
      out.declarations.push({
        type: 'function',
        name,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: { type: 'object', ...stripSchemaMeta(tool.input_schema) },
        ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
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
  if (blocked !== undefined && blocked !== null) {
    if (!Array.isArray(blocked) || blocked.some((d) => typeof d !== 'string')) throw invalidRequest(`${param}.blocked_domains: Input should be a list of strings.`, `${param}.blocked_domains`, 'invalid_type');
    if (blocked.length > 0) declaration.filters = { blocked_domains: blocked };
  }
  const location = tool.user_location;
  if (isPlainObject(location)) {
    const { type: _type, ...rest } = location;
    declaration.user_location = { type: 'approximate', ...rest };
  }
  return declaration;
}

/** Drops JSON-Schema meta keywords (`$schema`, …) at every level; the schema's meaning is unchanged. */
export function stripSchemaMeta(schema: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_META_KEYS.has(key)) continue;
    if (isPlainObject(value)) out[key] = stripSchemaMeta(value);
    else if (Array.isArray(value)) out[key] = value.map((v) => (isPlainObject(v) ? stripSchemaMeta(v) : v));
    else out[key] = value;
  }
  return out;
}

export function decodeToolChoice(choice: unknown, tools: DecodedTools): { toolChoice?: unknown; parallel?: boolean } {
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
