import type { McpService } from '../mcp/service.js';
import type { ModelItem } from '../protocol/model.js';
import type { ItemValidator } from '../protocol/item-validation.js';
import type { Item, JsonObject } from '../protocol/responses.js';
import type { ApprovalVerdict, ApprovedCall, DeclaredTool, GatewayExecution, InputCheckPolicy, LoadableRegistry, RegistryEntry, RegistryView, ToolSearchSettings } from './types.js';
import type { Cancellation } from '../util/abort.js';

/** What an execution side may know of the request it serves. */
export interface RequestContext {
  /** The request's `include` list (e.g. `web_search_call.action.sources`). */
  include: readonly string[];
  /** The model the request names (per-model settings such as tool_search's deferral mode). */
  model?: string;
  /** The conversation before this request (history, then input): tools that keep state across turns look here (code_interpreter's container). */
  priorItems?: readonly Item[];
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
  /** The conversation before this request's tools are discovered (history, then input): earlier discoveries can be reused. */
  priorItems: readonly Item[];
  /** The request's abort; `abortSignalOf` gives the AbortSignal an API needs. */
  signal: Cancellation;
}

/** What `replay` may ask while a conversation is rebuilt for the model. */
export interface ReplayContext {
  /** The name the model sees for a declared client tool of this request (namespaced members included). */
  declaredName(type: string, name: string, namespace: string): string | undefined;
  /** Approval requests met so far in the rebuild, by id: an answer that comes later pairs with its request. */
  readonly approvalRequests: Map<string, Item>;
  /**
   * Approval requests whose answer has been replayed as the model's call: the gateway call that
   * ran because of the approval contributes only its result.
   */
  readonly answeredApprovals: Set<string>;
  /** This request's registry (hosted tool_search rebuilds its results from the tools it loaded). */
  readonly registry: LoadableRegistry;
}

/** A tool type's approvals (today MCP's `require_approval`): the turn asks, the client answers. */
export interface ApprovalGate {
  /** The item type of a request the turn emits (`mcp_approval_request`). */
  readonly requestItemType: string;
  /** The item type of an answer in the input (`mcp_approval_response`). */
  readonly answerItemType: string;
  /**
   * Checks every answer in the input (responses-api.md §3): it must answer a request in the
   * conversation that this gateway issued, once, unchanged, for a tool this request still offers
   * (`offered`: the names the first round offers). Checked only: answers are used up when the
   * turn runs. Throws a 400 naming the answer otherwise.
   */
  resolve(
    history: readonly Item[],
    input: readonly Item[],
    registry: RegistryView,
    check: (id: string, digest: string) => Promise<ApprovalVerdict>,
    offered?: ReadonlySet<string>,
  ): Promise<ApprovedCall[]>;
  /** The digest that binds an approval request item the turn emitted; undefined when the item is not this gate's. */
  bind(item: Item, registry: RegistryView): string | undefined;
}

/** The public lifecycle of an item that opens a turn (e.g. `mcp_list_tools`): added as `opened`, then these events, then done. */
export interface PreludeLifecycle {
  readonly itemType: string;
  opened(item: Item): Item;
  /** Event types announced between added and done (`item_id`, `output_index` are filled in). */
  readonly events: readonly string[];
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
  /**
   * Stage 1, per request (optional): checks this type's declarations as a whole — those in `tools`
   * and those the input's client `tool_search_output` items declare (MCP: how many servers one
   * request may name). Throws ToolDeclarationError; runs before anything is contacted.
   */
  checkRequest?(declarations: readonly JsonObject[], ctx: DeclareContext): void;
  /** Stage 2 (optional): ask the tool's server what it offers (MCP `tools/list`). */
  discover?(declaration: D, param: string, ctx: DiscoverContext): Promise<Discovered<D>>;
  /** The model-visible functions for this declaration (none = omitted from the model). */
  normalize(declaration: D, param: string, ctx: DeclareContext): RegistryEntry[];
  /**
   * Stage 4 (optional): once every declaration is registered, serve the set as a whole (hosted
   * tool_search indexes the deferred tools and loads them into `registry`).
   */
  complete?(declaration: D, ctx: CompleteContext): void;
  /**
   * The public item types this tool type owns (its calls, outputs, approvals, listings) and the
   * validator of each, used on every item a client sends (`input`, conversation items). The engine
   * owns only messages, reasoning, compactions and item references: any other type is unknown.
   */
  readonly items?: Readonly<Record<string, ItemValidator>>;
  /**
   * Client types: the public item of a call the client answers, and of its answer when the answer
   * must name a call the conversation holds (paired by `call_id`; checked when a turn is prepared).
   */
  readonly clientCallItems?: { readonly call: string; readonly output?: string };
  /** Gateway types: the public item types their calls are projected into (`web_search_call`). */
  readonly callItemTypes?: readonly string[];
  /**
   * Gateway types: the call as the model saw it, rebuilt from its public item, for when the
   * gateway no longer holds the call's model-facing record. Without `output` the result is gone.
   */
  replayCall?(item: Item): ReplayedCall;
  /** Public item types of this tool type that `replay` turns back into what the model saw (calls, outputs, approvals). */
  readonly replayItemTypes?: readonly string[];
  /** A stored or echoed item of `replayItemTypes` → its model-facing items (none: the model does not see it). */
  replay?(item: Item, ctx: ReplayContext): ModelItem[];
  /** Approvals this type's calls may need. */
  readonly gate?: ApprovalGate;
  /** Items this type's discovery produces at the start of a turn, and their events. */
  readonly prelude?: PreludeLifecycle;
  /** The declaration as stored or echoed anywhere (also inside `tool_search_output`): credentials removed. Default: unchanged. */
  redact?(raw: JsonObject): JsonObject;
  /** The declaration as echoed in `Response.tools`. Default: `redact`. */
  echo?(raw: JsonObject): JsonObject;
  /** `tool_choice: {type: <one of types>}` selects the entries of this identity type (hosted aliases: `web_search_preview` → `web_search`). */
  readonly choiceType?: string;
}

/** What stage 4's `complete` sees: the registry built from the request's declarations, and the declarations themselves. */
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
