import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { callIdOf } from '../replay.js';
import { optionalObject, optionalString } from '../validate.js';
import { HostedToolSearch, toolSearchFunction } from './execution.js';
import { markSearchedTools, replaySearchResult } from './loaded.js';
import { DEFAULT_TOOL_SEARCH_SETTINGS, deferralModeFor } from './settings.js';

export interface ToolSearchDeclaration {
  execution: 'client' | 'server';
  description?: string;
  parameters?: JsonObject;
  /** Server execution: this request's search, once normalized. */
  hosted?: HostedToolSearch;
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
 * visible. With `execution: "server"` (the default) the gateway runs it (execution.ts): the
 * model sees a compact index of the deferred tools and loads them by path or BM25 query.
 */
export const toolSearchHandler: ToolHandler<ToolSearchDeclaration> = {
  types: ['tool_search'],
  owner: 'client',
  // a search is the model's call of the tool_search function; its output tells what loaded
  clientCallItems: { call: 'tool_search_call' },
  replayItemTypes: ['tool_search_call', 'tool_search_output'],
  replay(item, ctx) {
    // what the hosted search told the model, rebuilt from the tools it loaded
    if (item.type === 'tool_search_output' && item.execution === 'server') return [{ type: 'function_call_output', callId: callIdOf(item), output: replaySearchResult(item, ctx.registry) }];
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
    if (decl.execution === 'client') {
      const fn = {
        name: TOOL_SEARCH_NAME,
        description: decl.description ?? 'Search for tools that are not loaded yet; matching tools become available on the next step.',
        parameters: decl.parameters ?? DEFAULT_PARAMETERS,
      };
      return [{ modelName: TOOL_SEARCH_NAME, fn, shape: 'tool_search', identity: { type: 'tool_search', name: TOOL_SEARCH_NAME }, owner: 'client', declaredAt: param }];
    }
    const settings = ctx.toolSearch ?? DEFAULT_TOOL_SEARCH_SETTINGS;
    const mode = deferralModeFor(settings, ctx.request?.model);
    // eager: nothing stays deferred (stage 5), so there is nothing to search
    if (mode === 'eager') return [];
    const search = new HostedToolSearch(settings, mode, toolSearchFunction(settings.maxLimit));
    decl.hosted = search;
    return [{ modelName: TOOL_SEARCH_NAME, fn: search.fn, shape: 'gateway', identity: { type: 'tool_search', name: TOOL_SEARCH_NAME }, owner: 'gateway', execution: search, declaredAt: param }];
  },
  complete(decl, { registry, parsed, declare }) {
    if (decl.execution !== 'server') return;
    if (decl.hosted) {
      decl.hosted.attach(registry, parsed);
      // what earlier turns' searches loaded (stored chain, conversation, echoed items) stays loaded
      markSearchedTools(declare.request?.priorItems ?? [], registry);
      return;
    }
    if (deferralModeFor(declare.toolSearch ?? DEFAULT_TOOL_SEARCH_SETTINGS, declare.request?.model) === 'eager') {
      for (const entry of registry.all()) if (entry.deferred) registry.markLoaded(entry.modelName);
    }
  },
};
