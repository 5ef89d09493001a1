import { GatewayError } from '../errors.js';
import type { FinishReason, ModelFunction, ModelItem, ModelToolChoice, RawEvent } from '../protocol/model.js';
import type { ToolRegistry } from '../tools/registry.js';
import { toolError, type RegistryEntry } from '../tools/types.js';
import type { ResponseAccumulator } from './accumulator.js';
import type { CitationBook } from './citations.js';
import type { PendingGatewayCall } from './types.js';
import { CustomToolCallStream, FunctionCallStream, MessageStream, ReasoningStream, emitToolSearchCall } from './item-streams.js';
import { EMPTY_SET } from '../util/empty.js';

/** Responses that already had their one repair round for inputs that failed a check (policy `retry`). */
const repairRoundUsed = new WeakSet<ResponseAccumulator>();

export interface RoundResult {
  finishReason: FinishReason;
  /** The stop string that ended the model's output, when the upstream says one did. */
  stopSequence?: string;
  /** Client-owned calls returned to the client this round. */
  clientCalls: number;
  /** Gateway-owned and unknown calls, in model call order. */
  gatewayCalls: PendingGatewayCall[];
  /** What the model said this round, as it will see it in the next one. */
  modelItems: ModelItem[];
}

/**
 * The names a round offers the model: the functions sent with it, none when `tool_choice` is
 * `none` (a call then is answered as unknown, never executed or returned).
 */
export function offeredNames(tools: readonly ModelFunction[], toolChoice: ModelToolChoice | undefined): ReadonlySet<string> {
  if (toolChoice === 'none' || tools.length === 0) return EMPTY_SET;
  return new Set(tools.map((fn) => fn.name));
}

/**
 * A registered name whose entry cannot be served (ownership and call shape disagree) is a gateway
 * bug, not a model mistake: the turn fails with `server_error` and the operator sees it logged.
 */
export class RegistryInvariantError extends GatewayError {
  constructor(entry: RegistryEntry) {
    super(500, 'server_error', 'server_error', `Tool '${entry.modelName}' (${entry.declaredAt}) is registered as ${entry.owner}-owned with call shape '${entry.shape}', which cannot be served.`);
  }
}

function assertConsistent(entry: RegistryEntry): void {
  const clientShape = entry.shape === 'function' || entry.shape === 'custom' || entry.shape === 'tool_search';
  if ((entry.owner === 'client') !== clientShape) throw new RegistryInvariantError(entry);
}

interface OpenCall {
  callId: string;
  name: string;
  entry: RegistryEntry | undefined;
  args: string;
  stream: FunctionCallStream | CustomToolCallStream | null;
}

/**
 * Raw → gateway → public for one inference round (architecture.md §5). Each call is classified
 * by the registry the moment its name arrives: client calls stream at once in their public
 * shape; gateway-owned and unknown calls stay hidden and are handed to the loop complete.
 */
export class RoundTranslator {
  private message: MessageStream | null = null;
  private reasoning: ReasoningStream | null = null;
  /** Whitespace that arrived before any visible text; dropped if nothing visible follows. */
  private leadingWhitespace = '';
  /** The round's calls by the model's index (made with the first: most rounds have none). */
  private calls: Map<number, OpenCall> | undefined;
  private readonly modelItems: ModelItem[] = [];
  private finishReason: FinishReason | null = null;
  private stopSequence: string | undefined;

  /**
   * `offered`: the model-visible names this round offered the model (see `offeredNames`); a call
   * to any other name — outside `allowed_tools`, deferred and never loaded, hidden — is routed as
   * an unknown tool even if the registry holds it. Absent: every visible registry entry.
   */
  constructor(
    private readonly acc: ResponseAccumulator,
    private readonly registry: ToolRegistry,
    private readonly citations?: CitationBook,
    private readonly offered?: ReadonlySet<string>,
    /** Deferred tools may be called once loaded even if not offered (and, with hosted tool_search, loaded by the call). */
    private readonly deferredCallable = false,
  ) {}

  get sawFinish(): boolean {
    return this.finishReason !== null;
  }

  /** Whether the model was cut off (token cap or content filter): open items end `incomplete`. */
  get truncated(): boolean {
    return this.finishReason === 'length' || this.finishReason === 'content_filter';
  }

  push(event: RawEvent): void {
    switch (event.kind) {
      case 'reasoning':
        if (this.message) this.closeMessage();
        (this.reasoning ??= new ReasoningStream(this.acc)).push(event.delta);
        break;
      case 'text':
        this.pushText(event.delta);
        break;
      case 'refusal':
        this.closeReasoning();
        this.openMessage().pushRefusal(event.delta);
        break;
      case 'tool_call_start':
        this.startCall(event.index, event.callId, event.name);
        break;
      case 'tool_call_args': {
        const call = this.calls?.get(event.index);
        if (!call) break;
        call.args += event.delta;
        call.stream?.push(event.delta);
        break;
      }
      case 'usage':
        this.acc.addUsage(event.usage.inputTokens, event.usage.outputTokens, event.usage.cachedTokens, event.usage.reasoningTokens);
        break;
      case 'finish':
        this.finishReason = event.reason;
        this.stopSequence = event.stopSequence;
        break;
      case 'error':
        // handled by the loop (it owns the terminal state)
        break;
    }
  }

  /** Closes every open item (statuses per `status`) and returns what the round produced. */
  finish(status: 'completed' | 'incomplete' = 'completed'): RoundResult {
    this.closeReasoning();
    this.closeMessage(status);
    let clientCalls = 0;
    const gatewayCalls: PendingGatewayCall[] = [];
    const modelCalls: ModelItem[] = [];
    const mayRepair = !repairRoundUsed.has(this.acc);
    for (const call of this.calls?.values() ?? []) {
      const args = call.stream instanceof CustomToolCallStream ? call.stream.arguments : call.args;
      modelCalls.push({ type: 'function_call', callId: call.callId, name: call.name, arguments: args });
      const rejection = status === 'completed' ? this.checkInput(call, mayRepair) : undefined;
      if (rejection !== undefined) {
        // the client never sees this call: the model gets the problem as the call's result
        gatewayCalls.push({ call: { callId: call.callId, modelName: call.name, arguments: args }, entry: call.entry, outcome: toolError(rejection) });
      } else if (call.stream) {
        call.stream.finish(status);
        clientCalls++;
      } else if (call.entry?.shape === 'tool_search') {
        if (status === 'completed') emitToolSearchCall(this.acc, call.callId, args);
        clientCalls++;
      } else if (status === 'completed') {
        gatewayCalls.push({ call: { callId: call.callId, modelName: call.name, arguments: args }, entry: call.entry });
      }
    }
    this.modelItems.push(...modelCalls);
    return { finishReason: this.finishReason ?? 'other', stopSequence: this.stopSequence, clientCalls, gatewayCalls, modelItems: this.modelItems };
  }

  /**
   * Runs a client call's input check (custom tools with a grammar). Returns why the call is not
   * returned (the model gets it as an error result instead), or undefined to return the call to the client.
   */
  private checkInput(call: OpenCall, mayRepair: boolean): string | undefined {
    const check = call.entry?.inputCheck;
    if (!check || !(call.stream instanceof CustomToolCallStream)) return undefined;
    const problem = check.check(call.stream.input);
    if (problem === undefined) return undefined;
    const action = check.policy === 'reject' ? 'reject' : check.policy === 'retry' && mayRepair ? 'repair' : 'returned';
    check.onMismatch?.(action, problem);
    if (action === 'returned') return undefined;
    if (action === 'repair') repairRoundUsed.add(this.acc);
    return `the call to '${call.name}' was not run: ${problem}\nCall the tool again with input that matches its grammar.`;
  }

  private pushText(delta: string): void {
    if (!this.message) {
      if (delta.trim() === '') {
        this.leadingWhitespace += delta;
        return;
      }
      delta = this.leadingWhitespace + delta;
      this.leadingWhitespace = '';
    }
    this.closeReasoning();
    this.openMessage().pushText(delta);
  }

  private openMessage(): MessageStream {
    return (this.message ??= new MessageStream(this.acc, this.citations));
  }

  private closeMessage(status: 'completed' | 'incomplete' = 'completed'): void {
    this.leadingWhitespace = '';
    if (!this.message) return;
    this.message.finish(status);
    this.modelItems.push(this.message.toModelItem());
    this.message = null;
  }

  private closeReasoning(): void {
    if (!this.reasoning) return;
    this.reasoning.finish();
    this.modelItems.push(this.reasoning.toModelItem());
    this.reasoning = null;
  }

  /** Routing checks visibility for this round: a name the model was not offered is unknown. */
  private route(name: string): RegistryEntry | undefined {
    const entry = this.registry.lookup(name);
    if (!entry) return undefined;
    if (this.offered ? this.offered.has(name) : this.registry.isVisible(entry)) return entry;
    if (!entry.deferred || !this.deferredCallable) return undefined;
    // a loaded tool the upstream was not sent (its schema was in the search result), or one the
    // model names without searching: loaded on the spot, as OpenAI's hosted search does
    if (this.registry.isVisible(entry)) return entry;
    if (!this.registry.loadOnCall) return undefined;
    this.registry.markLoaded(name);
    return entry;
  }

  private startCall(index: number, callId: string, name: string): void {
    this.closeReasoning();
    this.closeMessage();
    const entry = this.route(name);
    if (entry) assertConsistent(entry);
    let stream: OpenCall['stream'] = null;
    if (entry && entry.owner === 'client') {
      if (entry.shape === 'function') stream = new FunctionCallStream(this.acc, callId, entry);
      // A checked custom call is held back until complete (its input arrives as one delta then):
      // a rejected call must never have been shown to the client, and its input is only
      // known to be valid once all of it has arrived. Unchecked and `pass` calls stream live.
      else if (entry.shape === 'custom') stream = new CustomToolCallStream(this.acc, callId, entry, entry.inputCheck !== undefined && entry.inputCheck.policy !== 'pass');
    }
    (this.calls ??= new Map()).set(index, { callId, name, entry, args: '', stream });
  }
}
