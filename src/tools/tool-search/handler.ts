import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { callIdOf } from '../replay.js';
import { optionalObject, optionalString } from '../validate.js';

export interface ToolSearchDeclaration {
  execution: 'client' | 'server';
  description?: string;
  parameters?: JsonObject;
}

/** The model-visible name of the tool-search function. */
export const TOOL_SEARCH_NAME = 'tool_search';

const DEFAULT_PARAMETERS = {
  type: 'object',
  properties: { query: { type: 'string', description: 'What kind of tool you are looking for.' } },
  required: ['query'],
  additionalProperties: false,
};

/**
 * `tool_search`: with `execution: "client"` the client runs the search — calls come back as
 * `tool_search_call` and the client answers with `tool_search_output`, whose tools then become
 * visible. Server execution needs a gateway executor (omitted when none is configured).
 */
export const toolSearchHandler: ToolHandler<ToolSearchDeclaration> = {
  types: ['tool_search'],
  owner: 'client',
  // a client search is the model's call of the tool_search function; its output tells what loaded
  replayItemTypes: ['tool_search_call', 'tool_search_output'],
  replay(item) {
    if (item.type === 'tool_search_call') {
      return [{ type: 'function_call', callId: callIdOf(item), name: TOOL_SEARCH_NAME, arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {}) }];
    }
    const tools = Array.isArray(item.tools) ? (item.tools as JsonObject[]) : [];
    const names = tools.map((t) => (t.type === 'namespace' ? `${String(t.name)} (namespace)` : String(t.name ?? t.type)));
    return [{ type: 'function_call_output', callId: callIdOf(item), output: names.length ? `Loaded tools: ${names.join(', ')}` : 'No matching tools found.' }];
  },
  parse(raw, param) {
    const execution = raw.execution ?? 'server';
    if (execution !== 'client' && execution !== 'server') {
      throw new ToolDeclarationError(`Invalid '${param}.execution': expected 'server' or 'client'.`, `${param}.execution`, 'invalid_value');
    }
    return { execution, description: optionalString(raw, 'description', param), parameters: optionalObject(raw, 'parameters', param) };
  },
  normalize(decl, param, ctx): RegistryEntry[] {
    const fn = {
      name: TOOL_SEARCH_NAME,
      description: decl.description ?? 'Search for tools that are not loaded yet; matching tools become available on the next step.',
      parameters: decl.parameters ?? DEFAULT_PARAMETERS,
    };
    if (decl.execution === 'client') {
      return [{ modelName: TOOL_SEARCH_NAME, fn, shape: 'tool_search', identity: { type: 'tool_search', name: TOOL_SEARCH_NAME }, owner: 'client', declaredAt: param }];
    }
    const execution = ctx.executionFor('tool_search', decl as unknown as JsonObject, ctx.request);
    if (!execution) {
      ctx.logOnce('tool_search', 'tool_search (server execution) omitted from the model: no executor configured');
      return [];
    }
    return [{ modelName: TOOL_SEARCH_NAME, fn, shape: 'gateway', identity: { type: 'tool_search', name: TOOL_SEARCH_NAME }, owner: 'gateway', execution, declaredAt: param }];
  },
};
