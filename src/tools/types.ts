import type { ModelFunction, ModelGrammar } from '../protocol/model.js';
import type { Item, JsonObject } from '../protocol/responses.js';

/** How a registered model-visible function is returned or executed. */
export type CallShape = 'function' | 'custom' | 'tool_search' | 'gateway';

/** The one string parameter a `custom` call shape's function takes: the raw freeform input. */
export const CUSTOM_INPUT_KEY = 'input';

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
  /** Client-owned entries whose input must fit a declared format (custom tools with a grammar). */
  inputCheck?: InputCheck;
  /** Decoding the input under a grammar (custom tools whose grammar the gateway can check). */
  constrained?: ConstrainedInput;
}

/** What happens to a client call whose input does not fit its declared format. */
export type InputCheckPolicy = 'retry' | 'pass' | 'reject';

/**
 * A check the engine runs on a complete client call before returning it (architecture.md §2).
 * `retry`: the model gets an error result and one repair round per response, a second failure
 * is returned unchanged; `pass`: always returned; `reject`: always an error result for the model.
 */
export interface InputCheck {
  /** Why the input does not fit, or undefined when it does. Never throws. */
  check(input: string): string | undefined;
  policy: InputCheckPolicy;
  /** Told about every mismatch and what the engine did with it (for counters and logs). */
  onMismatch?(action: 'repair' | 'reject' | 'returned', problem: string): void;
}

/** A complete model call, after all argument fragments arrived. */
export interface ModelCall {
  callId: string;
  modelName: string;
  arguments: string;
}

/**
 * What a gateway call came to. Every kind is told to the model as the call's result (the loop
 * goes on); the kind says what happened, so no one reads it out of the text:
 * - `ok`: the tool ran; `output` is its result.
 * - `model_error`: the call itself was wrong or refused (unknown tool, arguments that are not a
 *   JSON object, input that fails its grammar, an error the tool reported): the model may correct it.
 * - `fatal`: the call could not be carried out (timed out, cancelled, the tool crashed or its
 *   program was killed): calling it again the same way would not help.
 * A failed call's public item is `failed`.
 */
export interface ToolOutcome {
  kind: 'ok' | 'model_error' | 'fatal';
  /** Text returned to the model as the tool result (an error reads `Error: <reason>`). */
  output: string;
  /** A failure's reason as the public item states it, without the `Error: ` the model reads. */
  reason?: string;
  /** Handler-specific detail for its public item (e.g. search sources). */
  detail?: unknown;
}

/** A successful call's outcome. */
export function toolResult(output: string, detail?: unknown): ToolOutcome {
  return detail === undefined ? { kind: 'ok', output } : { kind: 'ok', output, detail };
}

/** A failed call's outcome: the one place the model's `Error: ` text is made. */
export function toolError(reason: string, kind: 'model_error' | 'fatal' = 'model_error', detail?: unknown): ToolOutcome {
  const outcome: ToolOutcome = { kind, output: `Error: ${reason}`, reason };
  if (detail !== undefined) outcome.detail = detail;
  return outcome;
}

/** Whether a call failed (any kind but `ok`). */
export function failed(outcome: ToolOutcome): boolean {
  return outcome.kind !== 'ok';
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
  /** Files a tool wrote (code_interpreter): where the answer names one, a `container_file_citation` is added. */
  registerFiles?(files: ReadonlyArray<CitedFile>): void;
}

/** A file a gateway tool made, citable by its path in the answer. */
export interface CitedFile {
  containerId: string;
  fileId: string;
  filename: string;
  /** As the model knows it: `/mnt/data/report.csv`. */
  path: string;
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

/** An answered approval request, checked but not used up yet (that happens when its call starts). */
export interface ApprovedCall {
  /** callId = the approval request's id; arguments exactly as requested. */
  call: ModelCall;
  entry: RegistryEntry;
  /** false: the client declined (nothing runs; the answer is still used up when the turn starts). */
  approve: boolean;
  digest: string;
}

/** What a store says of an approval request id and digest (see ResponseStore.checkApproval). */
export type ApprovalVerdict = 'ok' | 'unknown' | 'used' | 'mismatch';

/** The registry as hooks may read it (the request's tools). */
export interface RegistryView {
  lookup(modelName: string): RegistryEntry | undefined;
  isVisible(entry: RegistryEntry): boolean;
  all(): IterableIterator<RegistryEntry>;
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
  /**
   * What an approval of this execution's calls is bound to beyond label, tool and arguments (MCP:
   * the server's URL), so an approval cannot be replayed against another server.
   */
  approvalScope?: string;
  /** Projects the approval request; the turn then ends and waits for the client's answer. */
  requestApproval?(invocation: PlannedInvocation, emit: ItemEmitter): void;
}

export { ToolDeclarationError, ToolTimeoutError } from '../errors.js';

/** How loaded deferred tools reach the model (config `tools.toolSearch.mode`). */
export type DeferralMode = 'result' | 'declare' | 'eager';

/** Hosted tool_search settings, as in config `tools.toolSearch`. */
export interface ToolSearchSettings {
  mode: DeferralMode;
  modelModes: Readonly<Record<string, DeferralMode>>;
  defaultLimit: number;
  maxLimit: number;
  maxToolsPerSearch: number;
  maxSchemaBytesPerSearch: number;
  maxLoadedTools: number;
  maxSearchesPerResponse: number;
}

/** The declarations a request's tools came from (`tools[2]` → its JSON), for tools that show them back (tool_search_output). */
export interface DeclaredTool {
  param: string;
  raw: JsonObject;
}

/** What a tool that loads deferred tools may do with the request's registry (implemented by ToolRegistry). */
export interface LoadableRegistry {
  lookup(modelName: string): RegistryEntry | undefined;
  all(): IterableIterator<RegistryEntry>;
  markLoaded(modelName: string): void;
  isLoaded(modelName: string): boolean;
  readonly loadedCount: number;
  deferral: 'declare' | 'result';
  loadOnCall: boolean;
}

/** How a tool's input can be decoded under its grammar: the grammar, and the call arguments a decoded input becomes. */
export interface ConstrainedInput {
  grammar: ModelGrammar;
  /** The model-facing call arguments for a decoded input (a custom tool: `{"input": …}`). */
  callArguments(input: string): string;
}
