import type { McpService } from '../mcp/service.js';
import type { Item, JsonObject } from '../protocol/responses.js';
import type { DeclaredTool, GatewayExecution, InputCheckPolicy, LoadableRegistry, RegistryEntry, ToolSearchSettings } from './types.js';

/** What an execution side may know of the request it serves. */
export interface RequestContext {
  /** The request's `include` list (e.g. `web_search_call.action.sources`). */
  include: readonly string[];
  /** The model the request names (per-model settings such as tool_search's deferral mode). */
  model?: string;
  /** The conversation before this request (history, then input): tools that keep state across turns look here (code_interpreter's container). */
  priorItems?: readonly JsonObject[];
  /** Whose request this is (the API key's tenant): tools reach only that tenant's files, vector stores and containers. */
  tenant?: string;
}

/** Builds the execution side of a gateway tool type for one declaration (undefined = not configured). */
export type ExecutionFactory = (declaration: JsonObject, request: RequestContext) => GatewayExecution | undefined;

/** What declaration-side handlers may ask of the gateway. */
export interface DeclareContext {
  /** The execution side configured for a gateway tool type, if any. */
  executionFor(toolType: string, declaration: JsonObject, request?: RequestContext): GatewayExecution | undefined;
  /** The request being served (absent outside a request, e.g. in benchmarks). */
  request?: RequestContext;
  /** Logs a message once per process (e.g. "web_search omitted: no provider configured"). */
  logOnce(key: string, message: string): void;
  /** MCP discovery and calls; absent = MCP is not available on this gateway. */
  mcp?: McpService;
  /** How custom-tool inputs that fail their grammar are handled (config `tools.grammar`; default retry). */
  grammar?: GrammarSettings;
  /** Hosted tool_search (config `tools.toolSearch`); absent = the defaults. */
  toolSearch?: ToolSearchSettings;
}

export interface GrammarSettings {
  policy: InputCheckPolicy;
  /** Logs one mismatch (the operator's view; the model sees the problem in its tool result). */
  log?(message: string, fields: Record<string, unknown>): void;
}

/** What the discover stage may ask beyond declaration. */
export interface DiscoverContext extends DeclareContext {
  /** `mcp_list_tools` items already in the conversation, by server_label (the latest wins). */
  priorListings: ReadonlyMap<string, JsonObject>;
  signal: AbortSignal;
}

export interface Discovered<D> {
  declaration: D;
  /** Public items the discovery produced (e.g. `mcp_list_tools`), emitted at the start of the turn. */
  items: Item[];
}

/**
 * One tool type: the declaration side (parse + normalize) for all types; gateway types attach
 * their execution side to the entries they produce. See architecture.md §1.
 */
export interface ToolHandler<D = JsonObject> {
  /** Public `type` values this handler accepts (aliases included). */
  readonly types: readonly string[];
  readonly owner: 'client' | 'gateway';
  /** Validates one declaration; throws ToolDeclarationError with a precise `param`. */
  parse(raw: JsonObject, param: string): D;
  /** Stage 2 (optional): ask the tool's server what it offers (MCP `tools/list`). */
  discover?(declaration: D, param: string, ctx: DiscoverContext): Promise<Discovered<D>>;
  /** The model-visible functions for this declaration (none = omitted from the model). */
  normalize(declaration: D, param: string, ctx: DeclareContext): RegistryEntry[];
  /**
   * Stage 5 (optional): once every declaration is registered, serve the set as a whole (hosted
   * tool_search indexes the deferred tools and loads them into `registry`).
   */
  complete?(declaration: D, ctx: CompleteContext): void;
  /** Gateway types: the public item types their calls are projected into (`web_search_call`). */
  readonly callItemTypes?: readonly string[];
  /**
   * Gateway types: the call as the model saw it, rebuilt from its public item, for when the
   * gateway no longer holds the call's model-facing record. Without `output` the result is gone.
   */
  replayCall?(item: JsonObject): ReplayedCall;
}

/** What stage 5 sees: the registry built from the request's declarations, and the declarations themselves. */
export interface CompleteContext {
  registry: LoadableRegistry;
  parsed: readonly DeclaredTool[];
  /** Where this declaration is (`tools[2]`). */
  param: string;
  declare: DeclareContext;
}

/** A gateway call rebuilt from its public item (see `ToolHandler.replayCall`). */
export interface ReplayedCall {
  name: string;
  arguments: string;
  /** Absent when the public item does not carry what the model was told. */
  output?: string;
}
