import type { ItemValidator } from '../protocol/item-validation.js';
import type { ModelFunction, ModelToolChoice } from '../protocol/model.js';
import type { Item, JsonObject } from '../protocol/responses.js';
import type { ApprovalGate, DeclareContext, DiscoverContext, PreludeLifecycle, ToolHandler } from './handler.js';
import {
  codeInterpreterHandler,
  customHandler,
  fileSearchHandler,
  functionHandler,
  mcpHandler,
  namespaceHandler,
  toolSearchHandler,
  webSearchHandler,
} from './handler-list.js';
import { ToolDeclarationError, type RegistryEntry } from './types.js';
import { isPlainObject } from './validate.js';
import { EMPTY_LIST } from '../util/empty.js';
import { isShared, KeptLists } from '../util/kept-runs.js';

const HANDLERS: readonly ToolHandler<any>[] = [
  functionHandler,
  customHandler,
  namespaceHandler,
  toolSearchHandler,
  webSearchHandler,
  fileSearchHandler,
  codeInterpreterHandler,
  mcpHandler,
];

const HANDLER_BY_TYPE: ReadonlyMap<string, ToolHandler<any>> = new Map(HANDLERS.flatMap((h) => h.types.map((t) => [t, h] as const)));

export function handlerFor(type: string): ToolHandler<any> | undefined {
  return HANDLER_BY_TYPE.get(type);
}

const HANDLER_BY_CALL_ITEM: ReadonlyMap<string, ToolHandler<any>> = new Map(HANDLERS.flatMap((h) => (h.callItemTypes ?? []).map((t) => [t, h] as const)));

/** The gateway tool type whose calls are projected into public items of this type, if any. */
export function handlerForCallItem(itemType: string): ToolHandler<any> | undefined {
  return HANDLER_BY_CALL_ITEM.get(itemType);
}

const HANDLER_BY_REPLAY_ITEM: ReadonlyMap<string, ToolHandler<any>> = new Map(HANDLERS.flatMap((h) => (h.replay ? (h.replayItemTypes ?? []) : []).map((t) => [t, h] as const)));

/** The tool type that replays public items of this type for the model (calls, outputs, approvals), if any. */
export function handlerForReplayItem(itemType: string): ToolHandler<any> | undefined {
  return HANDLER_BY_REPLAY_ITEM.get(itemType);
}

const ITEM_VALIDATORS: ReadonlyMap<string, ItemValidator> = new Map(HANDLERS.flatMap((h) => Object.entries(h.items ?? {})));

/** The validator of a public item type some tool type owns (`mcp_call`, `function_call_output` …), if any. */
export function toolItemValidator(itemType: string): ItemValidator | undefined {
  return ITEM_VALIDATORS.get(itemType);
}
/** Public item types of calls the client answers (`function_call`, `custom_tool_call`, …). */
export const CLIENT_CALL_ITEMS: ReadonlySet<string> = new Set(HANDLERS.flatMap((h) => (h.clientCallItems ? [h.clientCallItems.call] : [])));
/** Public item types of answers that must name a call the conversation holds (`function_call_output`, …). */
export const CLIENT_OUTPUT_ITEMS: ReadonlySet<string> = new Set(HANDLERS.flatMap((h) => (h.clientCallItems?.output ? [h.clientCallItems.output] : [])));

/** Every tool type's approval gate. */
export const APPROVAL_GATES: readonly ApprovalGate[] = HANDLERS.flatMap((h) => (h.gate ? [h.gate] : []));
/** Public item types of approvals, requests and answers: a rebuild pairs them (engine/conversation.ts, `ReplayState`). */
export const APPROVAL_ITEMS: ReadonlySet<string> = new Set(APPROVAL_GATES.flatMap((gate) => [gate.requestItemType, gate.answerItemType]));

const PRELUDE_BY_ITEM: ReadonlyMap<string, PreludeLifecycle> = new Map(HANDLERS.flatMap((h) => (h.prelude ? [[h.prelude.itemType, h.prelude] as const] : [])));

/** The lifecycle of an item that opens a turn (e.g. `mcp_list_tools`), if its tool type gives one. */
export function preludeFor(itemType: string): PreludeLifecycle | undefined {
  return PRELUDE_BY_ITEM.get(itemType);
}

/**
 * The request-scoped registry: model-visible name → entry (architecture.md §1, stage 4).
 * Routing is by lookup only; public identity is restored from the entry, never from the name.
 */
export class ToolRegistry {
  private readonly entries = new Map<string, RegistryEntry>();
  /** Deferred tools loaded (by a tool_search_output, a hosted search, or a call by name), in load order. */
  private readonly loaded = new Set<string>();
  /**
   * How loaded deferred tools reach the model: `declare` (appended to the upstream `tools`, as a
   * client-executed search needs) or `result` (only callable: their schemas were in the search
   * result, so the upstream `tools` block stays the same for prompt caching). Set by hosted tool_search.
   */
  deferral: 'declare' | 'result' = 'declare';
  /** A deferred tool the model calls by name without searching is loaded on the spot (hosted tool_search). */
  loadOnCall = false;

  get size(): number {
    return this.entries.size;
  }

  lookup(modelName: string): RegistryEntry | undefined {
    return this.entries.get(modelName);
  }

  all(): IterableIterator<RegistryEntry> {
    return this.entries.values();
  }

  add(entry: RegistryEntry): void {
    const existing = this.entries.get(entry.modelName);
    if (existing) {
      throw new ToolDeclarationError(
        `Tool name collision: ${describe(entry)} and ${describe(existing)} both appear to the model as '${entry.modelName}'.`,
        entry.declaredAt,
        'duplicate_tool_name',
      );
    }
    this.entries.set(entry.modelName, entry);
  }

  markLoaded(modelName: string): void {
    this.loaded.add(modelName);
  }

  isLoaded(modelName: string): boolean {
    return this.loaded.has(modelName);
  }

  /** How many deferred tools are loaded (the per-conversation cap counts these). */
  get loadedCount(): number {
    return this.loaded.size;
  }

  /** `offered` plus the loaded deferred tools (callable though not declared in mode `result`), when `include`. */
  withLoaded(offered: ReadonlySet<string>, include: boolean): ReadonlySet<string> {
    if (!include) return offered;
    const names = new Set(offered);
    for (const name of this.loaded) names.add(name);
    return names;
  }

  /** Callable by the model: not deferred, or loaded. */
  isVisible(entry: RegistryEntry): boolean {
    return !entry.deferred || this.loaded.has(entry.modelName);
  }

  /**
   * The functions declared to the model: the undeferred ones in declaration order, then (mode
   * `declare`) the loaded deferred ones in load order, so what earlier rounds sent stays a prefix.
   */
  visibleFunctions(): ModelFunction[] {
    const out: ModelFunction[] = [];
    for (const entry of this.entries.values()) if (!entry.deferred) out.push(entry.fn);
    if (this.deferral === 'declare') {
      for (const name of this.loaded) {
        const entry = this.entries.get(name);
        if (entry?.deferred) out.push(entry.fn);
      }
    }
    return out;
  }
}

function describe(entry: RegistryEntry): string {
  const id = entry.identity;
  const name = id.namespace ? `${id.namespace}.${id.name}` : id.serverLabel ? `${id.serverLabel}/${id.name}` : id.name;
  return `${entry.declaredAt} (${id.type} '${name}')`;
}

export interface ParsedTool {
  type: string;
  handler: ToolHandler<any> | undefined;
  declaration: unknown;
  param: string;
  raw: JsonObject;
}

/** Stage 1: classify and validate `tools[]`. Unknown types are kept (echoed), never executed or shown. */
export function parseTools(tools: unknown, param = 'tools'): ParsedTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new ToolDeclarationError(`Invalid type for '${param}': expected an array of tools.`, param, 'invalid_type');
  return tools.map((raw: unknown, i) => {
    const itemParam = `${param}[${i}]`;
    if (!isPlainObject(raw)) throw new ToolDeclarationError(`Invalid type for '${itemParam}': expected an object.`, itemParam, 'invalid_type');
    if (typeof raw.type !== 'string') throw new ToolDeclarationError(`Missing required parameter: '${itemParam}.type'.`, `${itemParam}.type`, 'missing_required_parameter');
    const handler = handlerFor(raw.type);
    return { type: raw.type, handler, declaration: handler ? handler.parse(raw, itemParam) : undefined, param: itemParam, raw };
  });
}

/**
 * Stage 1, per request: each handler checks its declarations as a whole (`ToolHandler.checkRequest`),
 * the declared ones and those loaded from `searched` (the input's client tool_search_output tools).
 */
export function checkDeclarations(declared: readonly ParsedTool[], searched: readonly JsonObject[], ctx: DeclareContext): void {
  if (declared.length === 0 && searched.length === 0) return;
  const byHandler = new Map<ToolHandler<any>, JsonObject[]>();
  const add = (handler: ToolHandler<any> | undefined, raw: JsonObject) => {
    if (handler?.checkRequest) byHandler.set(handler, [...(byHandler.get(handler) ?? []), raw]);
  };
  for (const tool of declared) add(tool.handler, tool.raw);
  for (const raw of searched) if (isPlainObject(raw) && typeof raw.type === 'string') add(handlerFor(raw.type), raw);
  for (const [handler, declarations] of byHandler) handler.checkRequest!(declarations, ctx);
}

/** The tools that the input's client `tool_search_output` items declare (a hosted search's output names declared tools). */
export function searchedDeclarations(items: readonly JsonObject[]): readonly JsonObject[] {
  // a loop, not `flatMap`: nearly every turn has none, and flatMap's callback and arrays cost more than the rest
  let out: JsonObject[] | undefined;
  for (const item of items) {
    if (item.type !== 'tool_search_output' || item.execution === 'server' || !Array.isArray(item.tools)) continue;
    out ??= [];
    for (const tool of item.tools as JsonObject[]) out.push(tool);
  }
  return out ?? EMPTY_LIST;
}

/** Whether a declared tool discovers what it offers (an MCP server's `tools/list`) before the turn. */
export function discovers(tool: ParsedTool): boolean {
  return tool.handler?.discover !== undefined;
}

/**
 * Stage 2: every handler that discovers (MCP `tools/list`) does so, all servers concurrently.
 * Returns the public items discovery produced, in declaration order.
 */
export async function discoverTools(parsed: ParsedTool[], ctx: DiscoverContext): Promise<Item[]> {
  const results = await Promise.all(
    parsed.map(async (tool) => (tool.handler?.discover ? tool.handler.discover(tool.declaration, tool.param, ctx) : undefined)),
  );
  const items: Item[] = [];
  results.forEach((result, i) => {
    if (!result) return;
    parsed[i].declaration = result.declaration;
    items.push(...result.items);
  });
  return items;
}

/** Stages 3–4: normalize every parsed tool and register its model-visible functions. */
export function registerTools(parsed: readonly ParsedTool[], ctx: DeclareContext, registry = new ToolRegistry()): ToolRegistry {
  let unknownTypes: Set<string> | undefined;
  for (const tool of parsed) {
    if (!tool.handler) {
      (unknownTypes ??= new Set()).add(tool.type);
      continue;
    }
    for (const entry of tool.handler.normalize(tool.declaration, tool.param, ctx)) registry.add(entry);
  }
  if (unknownTypes) logUnknownTypes(unknownTypes, ctx);
  requireSearchForDeferred(parsed);
  // stage 4, then: handlers that serve the registered set as a whole (hosted tool_search indexes the deferred tools)
  for (const tool of parsed) tool.handler?.complete?.(tool.declaration, { registry, parsed, param: tool.param, declare: ctx });
  return registry;
}

/** As OpenAI: a deferred tool is only reachable through a tool search, so declaring one without it is a mistake. */
function requireSearchForDeferred(parsed: readonly ParsedTool[]): void {
  if (parsed.some((tool) => tool.type === 'tool_search')) return;
  for (const tool of parsed) {
    const raw = tool.raw;
    if (raw.defer_loading === true) throw deferredWithoutSearch(`${tool.param}.defer_loading`);
    if (raw.type === 'namespace' && Array.isArray(raw.tools)) {
      const member = (raw.tools as unknown[]).findIndex((m) => isPlainObject(m) && m.defer_loading === true);
      if (member >= 0) throw deferredWithoutSearch(`${tool.param}.tools[${member}].defer_loading`);
    }
  }
}

function deferredWithoutSearch(param: string): ToolDeclarationError {
  return new ToolDeclarationError(`Deferred tools require tools.tool_search: '${param}' is set, but the request declares no tool_search tool to load it with.`, param, 'invalid_value');
}

/** Types shown by name in the warning; client-chosen, so their number and length are bounded. */
const UNKNOWN_TYPES_NAMED = 5;

/** One warning per request however many unknown tool types it declares (a client chooses how many). */
function logUnknownTypes(types: ReadonlySet<string>, ctx: DeclareContext): void {
  const named = [...types].sort().slice(0, UNKNOWN_TYPES_NAMED).map((type) => (type.length > 64 ? `${type.slice(0, 64)}…` : type));
  const more = types.size - named.length;
  const list = named.map((type) => `'${type}'`).join(', ') + (more > 0 ? ` and ${more} more` : '');
  const subject = types.size === 1 ? `tool type ${list} is` : `tool types ${list} are`;
  ctx.logOnce(`unknown:${named.join(',')}:${types.size}`, `${subject} not supported: kept in the response, not shown to the model`);
}

/**
 * Echoed lists of kept declarations (frozen: a tool list resent byte for byte, parsed once): the
 * echo is made of the declarations alone, so a resent list echoes the same array every time and
 * its JSON is found by reference (engine/response-json.ts), not compared.
 */
const echoedLists = new KeptLists<JsonObject[]>();

/** The `tools` echoed in the Response: as declared, minus credentials; function fields made explicit. */
export function echoTools(parsed: readonly ParsedTool[]): JsonObject[] {
  // only a list that may be kept (its declarations shared) is looked up: no array for any other
  const declared = isShared(parsed.at(-1)?.raw) ? parsed.map((tool) => tool.raw) : undefined;
  const kept = declared && echoedLists.find(declared);
  if (kept !== undefined) return kept;
  const echoed = parsed.map(({ raw, handler }) => (handler?.echo ? handler.echo(raw) : withoutCredentials(raw)));
  if (declared) echoedLists.keep(declared, echoed);
  return echoed;
}

/** A tool declaration as it may be stored or echoed: its type's credentials removed (`redact`). */
export function withoutCredentials(tool: JsonObject): JsonObject {
  const handler = typeof tool.type === 'string' ? handlerFor(tool.type) : undefined;
  return handler?.redact ? handler.redact(tool) : tool;
}

/** An item as it may be stored or echoed: tool declarations it carries (`tool_search_output`) without credentials. */
export function itemWithoutCredentials(item: Item): Item {
  if (item.type !== 'tool_search_output' || !Array.isArray(item.tools)) return item;
  return { ...item, tools: item.tools.map((tool) => (isPlainObject(tool) ? withoutCredentials(tool) : tool)) };
}

export interface ResolvedToolChoice {
  toolChoice: ModelToolChoice | undefined;
  functions: ModelFunction[];
  /** `functions` is a chosen subset (allowed_tools, one MCP server): tools loaded later are not added to it. */
  restricted?: boolean;
}

/** `tool_choice` by type for hosted types, aliases included (`web_search_preview` → `web_search`). */
const HOSTED_CHOICE_TYPES: Readonly<Record<string, string>> = Object.fromEntries(HANDLERS.flatMap((h) => (h.choiceType ? h.types.map((t) => [t, h.choiceType!]) : [])));

/** `tool_choice` resolved through the registry into the upstream's vocabulary plus the visible set. */
export function resolveToolChoice(choice: unknown, registry: ToolRegistry): ResolvedToolChoice {
  const all = registry.visibleFunctions();
  if (choice === undefined || choice === null) return { toolChoice: undefined, functions: all };
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { toolChoice: choice, functions: all };
  if (!isPlainObject(choice) || typeof choice.type !== 'string') {
    throw new ToolDeclarationError(`Invalid 'tool_choice': expected 'none', 'auto', 'required' or an object.`, 'tool_choice', 'invalid_value');
  }
  const visibleEntries = [...registry.all()].filter((e) => registry.isVisible(e));
  const pick = (matches: (e: RegistryEntry) => boolean, what: string, param = 'tool_choice'): RegistryEntry[] => {
    const found = visibleEntries.filter(matches);
    if (found.length === 0) throw new ToolDeclarationError(`Invalid 'tool_choice': ${what} is not among the request's tools.`, param, 'invalid_value');
    return found;
  };
  const forceOne = (entry: RegistryEntry): ResolvedToolChoice => ({ toolChoice: { name: entry.modelName }, functions: all });
  const requireAmong = (entries: RegistryEntry[]): ResolvedToolChoice =>
    entries.length === 1 ? forceOne(entries[0]) : { toolChoice: 'required', functions: entries.map((e) => e.fn), restricted: true };

  switch (choice.type) {
    case 'function':
    case 'custom': {
      const name = String(choice.name ?? '');
      const namespace = typeof choice.namespace === 'string' ? choice.namespace : undefined;
      const [entry] = pick(
        (e) => e.identity.type === choice.type && e.identity.name === name && e.identity.namespace === namespace,
        `${choice.type} '${namespace ? `${namespace}.` : ''}${name}'`,
      );
      return forceOne(entry);
    }
    case 'mcp': {
      const label = String(choice.server_label ?? '');
      const name = typeof choice.name === 'string' ? choice.name : undefined;
      return requireAmong(pick((e) => e.identity.type === 'mcp' && e.identity.serverLabel === label && (name === undefined || e.identity.name === name), `mcp server '${label}'${name ? ` tool '${name}'` : ''}`));
    }
    case 'allowed_tools': {
      const mode = choice.mode ?? 'auto';
      if (mode !== 'auto' && mode !== 'required') throw new ToolDeclarationError(`Invalid 'tool_choice.mode': expected 'auto' or 'required'.`, 'tool_choice.mode', 'invalid_value');
      if (!Array.isArray(choice.tools)) throw new ToolDeclarationError(`Missing required parameter: 'tool_choice.tools'.`, 'tool_choice.tools', 'missing_required_parameter');
      const allowed = new Set<RegistryEntry>();
      choice.tools.forEach((ref: unknown, i: number) => {
        if (!isPlainObject(ref)) throw new ToolDeclarationError(`Invalid 'tool_choice.tools[${i}]': expected an object.`, `tool_choice.tools[${i}]`, 'invalid_type');
        for (const entry of visibleEntries.filter((e) => matchesReference(e, ref))) allowed.add(entry);
      });
      return { toolChoice: mode, functions: [...allowed].map((e) => e.fn), restricted: true };
    }
    default: {
      const hosted = HOSTED_CHOICE_TYPES[choice.type];
      if (!hosted) throw new ToolDeclarationError(`Invalid 'tool_choice.type': '${choice.type}'.`, 'tool_choice.type', 'invalid_value');
      const entries = pick((e) => e.identity.type === hosted, `tool type '${choice.type}'`);
      // forcing web_search means searching: its primary function, not open_page or find_in_page
      const primary = entries.find((e) => e.modelName === hosted);
      return primary ? forceOne(primary) : requireAmong(entries);
    }
  }
}

function matchesReference(entry: RegistryEntry, ref: JsonObject): boolean {
  const id = entry.identity;
  switch (ref.type) {
    case 'function':
    case 'custom':
      return id.type === ref.type && id.name === ref.name && id.namespace === (typeof ref.namespace === 'string' ? ref.namespace : undefined);
    case 'namespace':
      return id.namespace === ref.name;
    case 'mcp':
      return id.type === 'mcp' && id.serverLabel === ref.server_label && (ref.name === undefined || id.name === ref.name);
    default:
      return HOSTED_CHOICE_TYPES[String(ref.type)] === id.type || ref.type === id.type;
  }
}
