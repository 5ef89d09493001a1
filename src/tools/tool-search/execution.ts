import type { ModelFunction } from '../../protocol/model.js';
import { ID_PREFIX, type JsonObject, type ToolSearchCallItem, type ToolSearchOutputItem } from '../../protocol/responses.js';
import { toolError, toolResult, type DeclaredTool, type GatewayExecution, type GatewayInvocation, type ItemEmitter, type LoadableRegistry, type PlannedInvocation, type RegistryEntry, type ToolOutcome, type ToolSearchSettings } from '../types.js';
import { loadedDeclarations, ToolCatalog, type CatalogTool } from './catalog.js';

/** What a search hands its public items: the declarations it loaded. */
interface SearchDetail {
  tools: JsonObject[];
}

/**
 * Hosted `tool_search` for one request (execution `server`): the model sees a `tool_search`
 * function whose description is the compact index of the deferred tools; a call loads tools by
 * path and/or BM25 query into the registry, and is projected into `tool_search_call` and
 * `tool_search_output` items (output_item.added/done only: there are no tool-search events).
 */
export class HostedToolSearch implements GatewayExecution {
  readonly parallelSafe = false;
  readonly timeoutMs = 10_000;
  private registry: LoadableRegistry | undefined;
  private catalog: ToolCatalog | undefined;
  private searches = 0;

  constructor(
    private readonly settings: ToolSearchSettings,
    private readonly mode: 'result' | 'declare',
    /** The model-visible function; its description is filled in once the deferred tools are known. */
    readonly fn: ModelFunction,
  ) {}

  /** Stage 5: index the request's deferred tools (their public declarations come from `parsed`). */
  attach(registry: LoadableRegistry, parsed: readonly DeclaredTool[]): void {
    this.registry = registry;
    this.catalog = new ToolCatalog(registry, parsed);
    registry.deferral = this.mode;
    registry.loadOnCall = true;
    this.fn.description = searchDescription(this.catalog, this.mode);
  }

  begin(invocation: PlannedInvocation, emit: ItemEmitter): { index: number; item: ToolSearchCallItem } {
    const item: ToolSearchCallItem = { type: 'tool_search_call', id: emit.newId(ID_PREFIX.toolSearch), call_id: invocation.call.callId, execution: 'server', arguments: invocation.args, status: 'in_progress' };
    return { index: emit.add(item), item };
  }

  async run(invocation: GatewayInvocation): Promise<ToolOutcome> {
    return this.search(invocation.args);
  }

  end(_invocation: PlannedInvocation, outcome: ToolOutcome, emit: ItemEmitter, state: unknown): void {
    const { index, item } = state as { index: number; item: ToolSearchCallItem };
    item.status = 'completed';
    emit.done(index, item);
    const tools = (outcome.detail as SearchDetail | undefined)?.tools ?? [];
    const output: ToolSearchOutputItem = { type: 'tool_search_output', id: emit.newId(ID_PREFIX.toolSearchOutput), call_id: item.call_id, execution: 'server', tools, status: 'completed' };
    emit.done(emit.add(output), output);
  }

  /** One search: paths first (exact), then the query's best matches, within the caps. */
  search(args: JsonObject): ToolOutcome {
    const registry = this.registry;
    const catalog = this.catalog;
    if (!registry || !catalog) return toolError('tool search is not available.', 'fatal');
    if (++this.searches > this.settings.maxSearchesPerResponse) {
      return toolError(`at most ${this.settings.maxSearchesPerResponse} tool searches per response. Use the tools already loaded, or answer.`);
    }
    const paths = Array.isArray(args.paths) ? args.paths.filter((p): p is string => typeof p === 'string') : typeof args.paths === 'string' ? [args.paths] : [];
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (paths.length === 0 && query === '') return toolError('give `paths` (exact tool names from the list) and/or a `query`.');
    const limit = Math.min(this.settings.maxLimit, Math.max(1, Number.isInteger(args.limit) ? (args.limit as number) : this.settings.defaultLimit));

    const notes: string[] = [];
    const wanted: CatalogTool[] = [];
    const want = (tool: CatalogTool) => {
      if (!wanted.includes(tool)) wanted.push(tool);
    };
    for (const path of paths) {
      const found = catalog.resolve(path);
      if (found.length === 0) notes.push(`'${path}' is not a tool you can load.`);
      found.forEach(want);
    }
    if (query) {
      const hits = catalog.search(query).slice(0, limit);
      if (hits.length === 0) notes.push(`Nothing matched the query '${query}'.`);
      hits.forEach(want);
    }

    const loaded: CatalogTool[] = [];
    let schemaBytes = 0;
    let skipped = 0;
    for (const tool of wanted) {
      if (registry.isLoaded(tool.entry.modelName)) {
        loaded.push(tool);
        continue;
      }
      const bytes = Buffer.byteLength(JSON.stringify(tool.entry.fn.parameters ?? {}));
      const overCap = loaded.length >= this.settings.maxToolsPerSearch || schemaBytes + bytes > this.settings.maxSchemaBytesPerSearch || registry.loadedCount >= this.settings.maxLoadedTools;
      if (overCap) {
        skipped++;
        continue;
      }
      schemaBytes += bytes;
      registry.markLoaded(tool.entry.modelName);
      loaded.push(tool);
    }
    if (skipped > 0) {
      notes.push(`${skipped} more matching tool${skipped === 1 ? ' was' : 's were'} not loaded (at most ${this.settings.maxToolsPerSearch} tools and ${this.settings.maxSchemaBytesPerSearch} schema bytes per search, ${this.settings.maxLoadedTools} per conversation); ask for them by path if you need them.`);
    }
    const output = [searchResultText(loaded.map((t) => t.entry), this.mode), ...notes].join('\n\n');
    return toolResult(output, { tools: loadedDeclarations(loaded) } satisfies SearchDetail);
  }
}

/** The model-visible tool_search function (its description is filled by `attach`). */
export function toolSearchFunction(maxLimit: number): ModelFunction {
  return {
    name: 'tool_search',
    description: '',
    parameters: {
      type: 'object',
      properties: {
        paths: { type: 'array', items: { type: 'string' }, description: 'Exact names from the list: `ns` (every tool of a namespace or server), `ns.tool`, or a bare tool name.' },
        query: { type: 'string', description: 'Words describing the tools you need (searched in names, descriptions and parameter names).' },
        limit: { type: 'integer', minimum: 1, maximum: maxLimit, description: 'How many tools the query loads at most.' },
      },
      additionalProperties: false,
    },
  };
}

function searchDescription(catalog: ToolCatalog, mode: 'result' | 'declare'): string {
  const then = mode === 'result' ? 'their schemas come back in the result; then call them by the names given there' : 'they are then added to your tools';
  const head = `Load tools that are not loaded yet. These can be loaded (give \`paths\` for exact names, or a \`query\`); ${then}. Calling one by name also loads it.`;
  const index = catalog.describe();
  return index ? `${head}\n\n${index}` : `${head}\n\n(no tools to load)`;
}

/**
 * What the model reads as the search result. A pure function of the loaded tools, so replaying
 * an earlier turn's search reproduces it (prompt caching).
 */
export function searchResultText(entries: readonly RegistryEntry[], mode: 'result' | 'declare'): string {
  if (entries.length === 0) return 'No tools were loaded.';
  if (mode === 'declare') return `Loaded ${entries.length} tool${entries.length === 1 ? '' : 's'}; now in your tool list: ${entries.map((e) => e.modelName).join(', ')}.`;
  const blocks = entries.map((e) => {
    const description = e.fn.description ? `\n${e.fn.description}` : '';
    return `## ${e.modelName}${description}\nParameters (JSON Schema): ${JSON.stringify(e.fn.parameters ?? { type: 'object', properties: {} })}`;
  });
  return `Loaded ${entries.length} tool${entries.length === 1 ? '' : 's'}. Call ${entries.length === 1 ? 'it' : 'them'} as functions by these names:\n\n${blocks.join('\n\n')}`;
}
