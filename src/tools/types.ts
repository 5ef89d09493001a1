import type { ModelFunction } from '../protocol/model.js';
import type { Item, JsonObject } from '../protocol/responses.js';

/** How a registered model-visible function is returned or executed. */
export type CallShape = 'function' | 'custom' | 'tool_search' | 'gateway';

/** Public identity of a model-visible function: what the client declared. */
export interface ToolIdentity {
  /** The declared tool type (`function`, `custom`, `mcp`, `web_search`, …). */
  type: string;
  /** The public tool name (a namespace member's own name, an MCP tool's name). */
  name: string;
  namespace?: string;
  serverLabel?: string;
}

export interface RegistryEntry {
  /** The name the model sees and calls. */
  modelName: string;
  fn: ModelFunction;
  shape: CallShape;
  identity: ToolIdentity;
  owner: 'client' | 'gateway';
  /** Gateway-owned entries: who runs the call. Absent = gateway-owned but not configured (error result). */
  execution?: GatewayExecution;
  /** Where it was declared, for error messages (`tools[3]`). */
  declaredAt: string;
  /** Only visible once a tool_search loads it. */
  deferred?: boolean;
}

/** A complete model call, after all argument fragments arrived. */
export interface ModelCall {
  callId: string;
  modelName: string;
  arguments: string;
}

/** What the model is told about a gateway call's outcome. */
export interface ToolOutcome {
  /** Text returned to the model as the tool result. */
  output: string;
  isError: boolean;
  /** Handler-specific detail for its public item (e.g. search sources). */
  detail?: unknown;
}

/** Something the model may cite as `[n]`: a web page or an uploaded file. */
export type CitationSource = { url: string; title: string } | { fileId: string; filename: string };

/** Opens and closes public items for a gateway call; a thin view of the response accumulator. */
export interface ItemEmitter {
  /** Appends an item and announces it; returns its output index. */
  add(item: Item): number;
  /** An item-scoped event (`item_id`, `output_index` are filled in). */
  event(type: string, outputIndex: number, fields?: Record<string, unknown>): void;
  done(outputIndex: number, item: Item): void;
  newId(prefix: string): string;
  /** Numbers sources for citation (`[n]` in the answer becomes a `url_citation` or a `file_citation`). */
  registerSources(sources: ReadonlyArray<CitationSource>): number[];
}

/** One running gateway call, as seen by its handler. */
export interface GatewayInvocation {
  call: ModelCall;
  entry: RegistryEntry;
  /** Parsed JSON arguments (validated to be an object). */
  args: JsonObject;
  signal: AbortSignal;
  /** Set when the call runs because the client approved it (MCP approvals). */
  approvalRequestId?: string;
  /** The turn's public output (e.g. to number sources for citation). */
  emit: ItemEmitter;
}

/** A call as planned before it runs (no signal yet). */
export type PlannedInvocation = Omit<GatewayInvocation, 'signal' | 'emit'>;

/**
 * The execution side of a gateway-owned tool type: it runs a call and projects it into its own
 * public item lifecycle. Never seen as `function_call` by the client.
 */
export interface GatewayExecution {
  /** Calls to one model-visible name may overlap only if true. */
  parallelSafe: boolean;
  /** Per-call timeout in ms. */
  timeoutMs: number;
  /** Opens the public item (in_progress). Returns state handed to `end`. */
  begin(invocation: PlannedInvocation, emit: ItemEmitter): unknown;
  run(invocation: GatewayInvocation): Promise<ToolOutcome>;
  /** Closes the public item with the outcome (also called with an error outcome on timeout/throw). */
  end(invocation: PlannedInvocation, outcome: ToolOutcome, emit: ItemEmitter, state: unknown): void;
  /** Whether the client must approve this call before it runs (MCP `require_approval`). */
  requiresApproval?(invocation: PlannedInvocation): boolean;
  /** Projects the approval request; the turn then ends and waits for the client's answer. */
  requestApproval?(invocation: PlannedInvocation, emit: ItemEmitter): void;
}

export class ToolDeclarationError extends Error {
  constructor(message: string, readonly param: string, readonly code = 'invalid_tool') {
    super(message);
  }
}

/** The abort reason a call's signal carries when its per-call timeout fired. */
export class ToolTimeoutError extends Error {}
