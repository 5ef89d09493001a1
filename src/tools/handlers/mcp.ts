import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { optionalObject, optionalString, requireString } from '../validate.js';

/** Fields of an `mcp` declaration that carry credentials: never stored, logged or echoed. */
export const MCP_SECRET_FIELDS = ['authorization', 'headers'] as const;

const LABEL_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * `mcp` declarations are validated here. Discovery and execution (tools/list, tools/call,
 * approvals) are not implemented yet: the server's tools are omitted from the model, logged once.
 */
export const mcpHandler: ToolHandler<JsonObject> = {
  types: ['mcp'],
  owner: 'gateway',
  parse(raw, param) {
    const label = requireString(raw, 'server_label', param);
    if (!LABEL_PATTERN.test(label)) {
      throw new ToolDeclarationError(`Invalid '${param}.server_label': must match ^[a-zA-Z0-9_-]{1,64}$.`, `${param}.server_label`, 'invalid_value');
    }
    const url = optionalString(raw, 'server_url', param);
    const connector = optionalString(raw, 'connector_id', param);
    if (url === undefined && connector === undefined) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.server_url'.`, `${param}.server_url`, 'missing_required_parameter');
    }
    optionalObject(raw, 'headers', param);
    optionalString(raw, 'authorization', param);
    return raw;
  },
  normalize(decl, _param, ctx): RegistryEntry[] {
    ctx.logOnce('mcp', `mcp server '${String(decl.server_label)}' omitted from the model: MCP execution is not configured`);
    return [];
  },
};
