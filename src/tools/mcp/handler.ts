import { withAddedFields } from '../../protocol/client-objects.js';
import { isAllowed, type ToolTraits } from '../../mcp/filters.js';
import { mcpExecution } from './execution.js';
import { mcpModelName } from '../../mcp/naming.js';
import type { McpToolInfo } from '../../mcp/pool.js';
import { DEFAULT_MCP_CONFIG, type McpServerRef } from '../../mcp/service.js';
import type { ModelItem } from '../../protocol/model.js';
import { ID_PREFIX, type Item, type JsonObject, type McpApprovalRequestItem, type McpListToolsItem } from '../../protocol/responses.js';
import { newId } from '../../util/ids.js';
import { isValidHeaderName, isValidHeaderValue, redactUrl } from '../../util/redact.js';
import { mcpApprovalGate } from './approvals.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, toolError, type RegistryEntry } from '../types.js';
import { isPlainObject, optionalObject, optionalString, optionalStringArray, requireString } from '../validate.js';
import { validateMcpApprovalRequest, validateMcpApprovalResponse, validateMcpCall, validateMcpListTools } from './items.js';
import { abortSignalOf } from '../../util/abort.js';

/** Fields of an `mcp` declaration that carry credentials: never stored, logged or echoed. */
export const MCP_SECRET_FIELDS = ['authorization', 'headers'] as const;

const LABEL_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** An `mcp` declaration after discovery: the server and the tools it offers this request. */
export interface McpDeclaration {
  raw: JsonObject;
  label: string;
  server?: McpServerRef;
  tools?: McpToolInfo[];
}

/** A tool's traits for filters: `read_only` comes from the server's `readOnlyHint` (absent = not read-only). */
function traitsOf(tool: { name: string; annotations?: Record<string, unknown> | null }): ToolTraits {
  return { name: tool.name, readOnly: tool.annotations?.readOnlyHint === true };
}

/**
 * Remote MCP servers: discovery lists the server's tools (or reuses an `mcp_list_tools` item
 * already in the conversation), filters apply, each tool becomes `mcp__<label>__<tool>` for the
 * model, and calls run through the gateway with approvals where required.
 */
export const mcpHandler: ToolHandler<McpDeclaration> = {
  types: ['mcp'],
  owner: 'gateway',
  checkRequest(declarations, ctx) {
    const limit = ctx.mcp?.config.maxServersPerRequest ?? DEFAULT_MCP_CONFIG.maxServersPerRequest;
    if (declarations.length > limit) {
      throw new ToolDeclarationError(`Too many MCP servers: ${declarations.length} declared, at most ${limit} allowed.`, 'tools', 'too_many_mcp_servers');
    }
  },
  callItemTypes: ['mcp_call'],
  items: { mcp_call: validateMcpCall, mcp_list_tools: validateMcpListTools, mcp_approval_request: validateMcpApprovalRequest, mcp_approval_response: validateMcpApprovalResponse },
  // an mcp_call carries its arguments and what the model was told (output, or the error)
  replayCall(item) {
    return {
      name: mcpModelName(String(item.server_label), String(item.name)),
      arguments: typeof item.arguments === 'string' && item.arguments ? item.arguments : '{}',
      output: item.error ? toolError(typeof item.error === 'string' ? item.error : JSON.stringify(item.error)).output : typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? ''),
    };
  },
  // an approval request becomes the model's call once the client answers it; unanswered, it is
  // left out (a call without a result breaks most chat templates)
  replayItemTypes: ['mcp_approval_request', 'mcp_approval_response', 'mcp_list_tools'],
  replay(item, ctx) {
    if (item.type === 'mcp_approval_request') ctx.approvalRequests.set(item.id, item);
    if (item.type !== 'mcp_approval_response') return [];
    const id = item.approval_request_id;
    const request = ctx.approvalRequests.get(id) as McpApprovalRequestItem | undefined;
    if (request?.type !== 'mcp_approval_request' || ctx.answeredApprovals.has(id)) return [];
    ctx.answeredApprovals.add(id);
    const call: ModelItem = { type: 'function_call', callId: id, name: mcpModelName(String(request.server_label), String(request.name)), arguments: String(request.arguments ?? '{}') };
    if (item.approve === true) return [call];
    const reason = typeof item.reason === 'string' && item.reason ? `: ${item.reason}` : '.';
    return [call, { type: 'function_call_output', callId: id, output: `The user declined to run this tool call${reason}` }];
  },
  gate: mcpApprovalGate,
  // a discovered listing: added (empty) → in_progress → completed → done
  prelude: {
    itemType: 'mcp_list_tools',
    opened: (item) => ({ ...item, tools: [] }) as Item,
    events: ['response.mcp_list_tools.in_progress', 'response.mcp_list_tools.completed'],
  },
  redact(raw) {
    const copy = { ...raw };
    for (const field of MCP_SECRET_FIELDS) delete copy[field];
    if (typeof copy.server_url === 'string') copy.server_url = redactUrl(copy.server_url);
    return copy;
  },
  parse(raw, param) {
    const label = requireString(raw, 'server_label', param);
    if (!LABEL_PATTERN.test(label)) {
      throw new ToolDeclarationError(`Invalid '${param}.server_label': must match ^[a-zA-Z0-9_-]{1,64}$.`, `${param}.server_label`, 'invalid_value');
    }
    optionalString(raw, 'server_url', param);
    optionalString(raw, 'connector_id', param);
    const authorization = optionalString(raw, 'authorization', param);
    // error texts never quote a header value: only where it is and what is wrong with it
    if (authorization !== undefined && !isValidHeaderValue(authorization)) {
      throw new ToolDeclarationError(`Invalid '${param}.authorization': it contains characters not allowed in an HTTP header (CR, LF, NUL or another control character).`, `${param}.authorization`, 'invalid_value');
    }
    const headers = optionalObject(raw, 'headers', param);
    if (headers) {
      Object.entries(headers).forEach(([key, value], i) => {
        // a header name may be a secret pasted in the wrong place too: named by position only
        if (!isValidHeaderName(key)) throw new ToolDeclarationError(`Invalid '${param}.headers': header #${i + 1} has a name that is not a valid HTTP header name.`, `${param}.headers`, 'invalid_value');
        if (typeof value !== 'string') throw new ToolDeclarationError(`Invalid '${param}.headers.${key}': header values must be strings.`, `${param}.headers.${key}`, 'invalid_type');
        if (!isValidHeaderValue(value)) {
          throw new ToolDeclarationError(`Invalid '${param}.headers.${key}': the value contains characters not allowed in an HTTP header (CR, LF, NUL or another control character).`, `${param}.headers.${key}`, 'invalid_value');
        }
      });
    }
    const allowed = raw.allowed_tools;
    if (allowed !== undefined && allowed !== null && !Array.isArray(allowed)) validateFilter(allowed, `${param}.allowed_tools`);
    if (Array.isArray(allowed)) optionalStringArray(raw, 'allowed_tools', param);
    const approval = raw.require_approval;
    if (approval !== undefined && approval !== null && approval !== 'always' && approval !== 'never') {
      if (!isPlainObject(approval)) throw new ToolDeclarationError(`Invalid '${param}.require_approval': expected 'always', 'never' or an object.`, `${param}.require_approval`, 'invalid_value');
      for (const key of ['always', 'never'] as const) if (approval[key] !== undefined && approval[key] !== null) validateFilter(approval[key], `${param}.require_approval.${key}`);
    }
    return { raw, label };
  },
  async discover(decl, param, ctx) {
    if (!ctx.mcp) return { declaration: decl, items: [] };
    const server = ctx.mcp.resolve(decl.raw, param);
    const prior = latestListing(ctx.priorItems, decl.label);
    if (prior && Array.isArray(prior.tools)) {
      // as OpenAI does: a listing already in the conversation is reused, not fetched again
      const tools = prior.tools.map((t) => ({
        name: String(t.name),
        description: typeof t.description === 'string' ? t.description : undefined,
        inputSchema: (t.input_schema as Record<string, unknown>) ?? { type: 'object', properties: {} },
        annotations: (t.annotations as Record<string, unknown> | undefined) ?? undefined,
      }));
      return { declaration: { ...decl, server, tools: allowedOnly(tools, decl, server) }, items: [] };
    }
    const listed = allowedOnly(await ctx.mcp.listTools(server, abortSignalOf(ctx.signal)), decl, server);
    const item: McpListToolsItem = {
      type: 'mcp_list_tools',
      id: newId(ID_PREFIX.mcpListTools),
      server_label: decl.label,
      tools: listed.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: t.annotations ?? null })),
      error: null,
    };
    return { declaration: { ...decl, server, tools: listed }, items: [item] };
  },
  normalize(decl, param, ctx): RegistryEntry[] {
    if (!ctx.mcp || !decl.server || !decl.tools) {
      ctx.logOnce('mcp', `mcp server '${decl.label}' omitted from the model: MCP is not configured on this gateway`);
      return [];
    }
    const traits = new Map(decl.tools.map((t) => [t.name, traitsOf(t)]));
    const timeoutMs = ctx.mcp.config.callTimeoutMs;
    const execution = mcpExecution(ctx.mcp, decl.server, decl.raw.require_approval, traits, timeoutMs);
    return decl.tools.map((tool) => {
      const modelName = mcpModelName(decl.label, tool.name);
      return {
        modelName,
        fn: {
          name: modelName,
          description: tool.description ?? `Tool '${tool.name}' of MCP server '${decl.label}'.`,
          parameters: normalizeSchema(tool.inputSchema),
        },
        shape: 'gateway',
        identity: { type: 'mcp', name: tool.name, serverLabel: decl.label },
        owner: 'gateway',
        execution,
        declaredAt: param,
        // a deferred server's tools are loaded one by one by tool_search
        ...(decl.raw.defer_loading === true ? { deferred: true } : {}),
      } satisfies RegistryEntry;
    });
  },
};

/** The latest successful `mcp_list_tools` of a server in the conversation (history, then this input). */
function latestListing(items: readonly Item[], label: string): McpListToolsItem | undefined {
  let latest: McpListToolsItem | undefined;
  for (const item of items) if (item.type === 'mcp_list_tools' && item.server_label === label && !item.error) latest = item;
  return latest;
}

/** The client's `allowed_tools`, narrowed further by the operator's list for a configured server. */
function allowedOnly(tools: McpToolInfo[], decl: McpDeclaration, server: McpServerRef): McpToolInfo[] {
  const operatorAllowed = server.operator?.allowedTools;
  return tools.filter((t) => isAllowed(decl.raw.allowed_tools, traitsOf(t)) && (operatorAllowed === undefined || operatorAllowed.includes(t.name)));
}

function validateFilter(value: unknown, param: string): void {
  if (!isPlainObject(value)) throw new ToolDeclarationError(`Invalid '${param}': expected an object with 'tool_names' and/or 'read_only'.`, param, 'invalid_type');
  optionalStringArray(value, 'tool_names', param);
  if (value.read_only !== undefined && typeof value.read_only !== 'boolean') throw new ToolDeclarationError(`Invalid type for '${param}.read_only': expected a boolean.`, `${param}.read_only`, 'invalid_type');
}

/** MCP input schemas are JSON Schema objects; chat servers want `type: "object"` with `properties`. */
function normalizeSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!schema || typeof schema !== 'object') return { type: 'object', properties: {} };
  return withAddedFields(schema, { type: 'object', properties: (schema.properties as Record<string, unknown>) ?? {} });
}
