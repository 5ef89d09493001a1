import type { JsonObject } from '../../protocol/responses.js';
import { MCP_SECRET_FIELDS } from '../mcp/handler.js';
import type { DeclaredTool, LoadableRegistry, RegistryEntry } from '../types.js';
import { isPlainObject } from '../validate.js';
import { redactUrl } from '../../util/redact.js';
import { Bm25Index } from './bm25.js';

/** Where a deferred tool was declared: alone, in a namespace, or as one tool of an MCP server. */
export interface CatalogGroup {
  kind: 'namespace' | 'mcp';
  name: string;
  description?: string;
  /** The group's declaration as the client wrote it. */
  raw: JsonObject;
}

/** One deferred tool the model can load. */
export interface CatalogTool {
  entry: RegistryEntry;
  /** How the model names it in `paths`: `ns.member`, `server.tool` or a bare name. */
  path: string;
  group?: CatalogGroup;
  /** The declaration as the client wrote it (a namespace member's own), for `tool_search_output.tools`. */
  raw: JsonObject;
}

/** The deferred tools of one request, searchable by path and by BM25 query. */
export class ToolCatalog {
  readonly tools: CatalogTool[];
  private readonly byPath = new Map<string, CatalogTool[]>();
  private readonly index = new Bm25Index<CatalogTool>();

  constructor(registry: LoadableRegistry, parsed: readonly DeclaredTool[]) {
    const byParam = new Map(parsed.map((tool) => [tool.param, tool]));
    this.tools = [];
    for (const entry of registry.all()) {
      if (!entry.deferred) continue;
      const tool = catalogTool(entry, byParam);
      if (tool) this.tools.push(tool);
    }
    for (const tool of this.tools) {
      const keys = [tool.path, tool.entry.modelName, ...(tool.group ? [tool.group.name] : [])];
      for (const key of new Set(keys)) this.byPath.set(key, [...(this.byPath.get(key) ?? []), tool]);
      this.index.add(tool, documentText(tool));
    }
  }

  /** Tools a path names: one tool, or every tool of a namespace or server. Empty = unknown path. */
  resolve(path: string): CatalogTool[] {
    return this.byPath.get(path.trim()) ?? [];
  }

  search(query: string): CatalogTool[] {
    return this.index.search(query).map((hit) => hit.value);
  }

  /**
   * The compact index the model sees in the tool_search description: names and one-line
   * descriptions, grouped by namespace and server, in declaration order. It lists every deferred
   * tool, loaded or not, so it stays the same from turn to turn (prompt caching).
   */
  describe(): string {
    const lines: string[] = [];
    let group: CatalogGroup | undefined;
    for (const tool of this.tools) {
      if (tool.group !== group) {
        group = tool.group;
        if (group) lines.push(`${group.kind === 'mcp' ? 'MCP server' : 'Namespace'} ${group.name}${group.description ? ` — ${oneLine(group.description)}` : ''}:`);
      }
      const description = oneLine(String(tool.raw.description ?? ''));
      lines.push(`${group ? '  ' : ''}- ${tool.path}${description ? `: ${description}` : ''}`);
    }
    return lines.join('\n');
  }
}

/** The tools a search loaded, as `tool_search_output.tools`: declarations grouped back into their namespace or server. */
export function loadedDeclarations(tools: readonly CatalogTool[]): JsonObject[] {
  const out: JsonObject[] = [];
  const groups = new Map<CatalogGroup, JsonObject>();
  for (const tool of tools) {
    if (!tool.group) {
      out.push(tool.raw);
      continue;
    }
    let declaration = groups.get(tool.group);
    if (!declaration) {
      declaration = tool.group.kind === 'namespace' ? { ...tool.group.raw, tools: [] } : { ...mcpWithoutCredentials(tool.group.raw), allowed_tools: [] };
      groups.set(tool.group, declaration);
      out.push(declaration);
    }
    if (tool.group.kind === 'namespace') (declaration.tools as JsonObject[]).push(tool.raw);
    else (declaration.allowed_tools as string[]).push(String(tool.raw.name));
  }
  return out;
}

/**
 * The registry entries a `tool_search_output`'s tools name (a hosted search's, from an earlier
 * turn or echoed back): matched by identity, never by parsing them as new declarations. Tools the
 * request no longer declares are skipped.
 */
export function entriesNamedBy(tools: unknown, registry: LoadableRegistry): RegistryEntry[] {
  if (!Array.isArray(tools)) return [];
  const entries = [...registry.all()];
  const out: RegistryEntry[] = [];
  const add = (match: (entry: RegistryEntry) => boolean) => {
    const entry = entries.find(match);
    if (entry && !out.includes(entry)) out.push(entry);
  };
  for (const tool of tools) {
    if (!isPlainObject(tool)) continue;
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      for (const member of tool.tools) if (isPlainObject(member)) add((e) => e.identity.namespace === tool.name && e.identity.name === member.name);
    } else if (tool.type === 'mcp' && Array.isArray(tool.allowed_tools)) {
      for (const name of tool.allowed_tools) add((e) => e.identity.type === 'mcp' && e.identity.serverLabel === tool.server_label && e.identity.name === name);
    } else if (tool.type === 'function' || tool.type === 'custom') {
      add((e) => e.identity.type === tool.type && e.identity.name === tool.name && e.identity.namespace === undefined);
    }
  }
  return out;
}

/** An MCP declaration as a search's output may show it (as registry.withoutCredentials; imported here it would be a cycle). */
function mcpWithoutCredentials(raw: JsonObject): JsonObject {
  const copy = { ...raw };
  for (const field of MCP_SECRET_FIELDS) delete copy[field];
  if (typeof copy.server_url === 'string') copy.server_url = redactUrl(copy.server_url);
  return copy;
}

function catalogTool(entry: RegistryEntry, byParam: ReadonlyMap<string, DeclaredTool>): CatalogTool | undefined {
  const id = entry.identity;
  const member = /^(.*)\.tools\[(\d+)\]$/.exec(entry.declaredAt);
  if (id.namespace !== undefined && member) {
    const parent = byParam.get(member[1]);
    const raw = parent && Array.isArray(parent.raw.tools) ? (parent.raw.tools as JsonObject[])[Number(member[2])] : undefined;
    if (!parent || !raw) return undefined;
    const group: CatalogGroup = groupOf(parent, 'namespace', id.namespace, parent.raw.description);
    return { entry, path: `${id.namespace}.${id.name}`, group, raw };
  }
  const declared = byParam.get(entry.declaredAt);
  if (!declared) return undefined;
  if (id.type === 'mcp' && id.serverLabel !== undefined) {
    const group = groupOf(declared, 'mcp', id.serverLabel, declared.raw.server_description);
    return { entry, path: `${id.serverLabel}.${id.name}`, group, raw: { name: id.name, description: entry.fn.description ?? '' } };
  }
  return { entry, path: id.name, raw: declared.raw };
}

/** One group object per declaration, so tools of one namespace or server share it. */
const groups = new WeakMap<DeclaredTool, CatalogGroup>();
function groupOf(tool: DeclaredTool, kind: CatalogGroup['kind'], name: string, description: unknown): CatalogGroup {
  let group = groups.get(tool);
  if (!group) {
    group = { kind, name, ...(typeof description === 'string' && description ? { description } : {}), raw: tool.raw };
    groups.set(tool, group);
  }
  return group;
}

/** What BM25 sees of a tool: its name, its group's, descriptions and parameter names. */
function documentText(tool: CatalogTool): string {
  const parts = [tool.path, String(tool.raw.description ?? tool.entry.fn.description ?? '')];
  if (tool.group) parts.push(tool.group.name);
  parts.push(...parameterNames(tool.entry.fn.parameters));
  return parts.join(' ');
}

function parameterNames(schema: unknown, depth = 0): string[] {
  if (!isPlainObject(schema) || depth > 3) return [];
  const names: string[] = [];
  if (isPlainObject(schema.properties)) {
    for (const [name, sub] of Object.entries(schema.properties)) names.push(name, ...parameterNames(sub, depth + 1));
  }
  if (isPlainObject(schema.items)) names.push(...parameterNames(schema.items, depth + 1));
  return names;
}

const ONE_LINE_CHARS = 100;

function oneLine(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length <= ONE_LINE_CHARS ? line : `${line.slice(0, ONE_LINE_CHARS - 1)}…`;
}
