import type { GatewayError } from '../errors.js';
import type { ModelItem, ModelRequest } from '../protocol/model.js';
import type { CompactionItem, Item, ResponseObject, Usage } from '../protocol/responses.js';
import type { GatewayCallRecord, StoredResponse, StreamEvent } from '../store/store.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { ApprovedCall, ModelCall, RegistryEntry, ToolOutcome } from '../tools/types.js';
import type { CreateRequest } from './request.js';
import type { Logger } from '../util/logger.js';
import type { TurnAbort } from '../util/abort.js';

export type { CompactionItem, Logger };

// Types the engine's stages share, in one place so that no engine file imports a sibling only
// for a type (and the stages do not import each other in a circle).

export interface AutoCompaction {
  /** Replaces `turn.conversation`: [instructions?, summary message, ...kept model items]. */
  conversation: ModelItem[];
  /** To emit as an output item of the response (before any other), so the chain carries it. */
  item: CompactionItem;
  /** The summarization call's usage. */
  usage: Usage;
  tokensBefore: number;
  tokensAfter: number;
}

export interface RunHooks {
  /** Called with the settled response (before its terminal event is announced). */
  onSettled?: (record: StoredResponse) => void;
  /** The response object to fill (from `newResponse`, e.g. already stored as queued). */
  response?: ResponseObject;
  /**
   * A background run: the events not yet in its log (waited for while being written), so the
   * terminal state is stored in one transaction with every event before it and the terminal one.
   */
  unloggedEvents?: () => Promise<StreamEvent[]>;
  /** A background run: the settlement wrote the log up to this sequence number. */
  logged?: (sequence: number) => void;
  /** The abort controller of the run (the caller's, for a background run); else one is made. */
  controller?: TurnAbort;
  /** Filled in as the run goes: how it ended, for the caller (a failure's status, the stop sequence). */
  outcome?: RunOutcome;
  /**
   * The sink reads the run's Response itself (`outcome.response`) where a lifecycle event would
   * carry it (the Messages surface's encoder): `response.created`, `in_progress` and the terminal
   * event are emitted without it, and the Response (echoing the request's tools and instructions)
   * is serialised only if something else needs its JSON.
   */
  readsResponse?: boolean;
}

/** The abort reason of a run another process took over (this one was silent too long): it must stop and write nothing. */
export class OwnershipLost extends Error {
  constructor() {
    super('Another gateway process took this response over after this one stopped answering.');
  }
}

/** The abort reason of a run cancelled through `POST /v1/responses/{id}/cancel`. */
export class RunCancelled extends Error {
  constructor() {
    super('The response was cancelled.');
  }
}

/** The abort reason of runs stopped because the gateway is shutting down. */
export class GatewayShutdown extends Error {
  constructor() {
    super('The gateway shut down before this response finished.');
  }
}

/**
 * Receives every public event in order, already serialized (`{"type":…,"sequence_number":…,…}`):
 * serializing once here lets identical payloads be shared. Streaming writes them out; blocking
 * passes no sink and nothing is serialized. A delta event (one per token) also comes with its head
 * and its text, so a sink that re-encodes events (the Messages surface) need not parse each back.
 */
export type EventSink = (type: string, json: string, head?: DeltaHead, delta?: string) => void;

/** The fixed part of an item's delta events, made once per item (`deltaHead` in accumulator.ts). */
export interface DeltaHead {
  /** `"item_id":…,"output_index":…[,"content_index":…],"delta":` */
  readonly json: string;
  readonly outputIndex: number;
  readonly contentIndex: number | undefined;
}

/** A call the gateway answers itself (gateway-owned, or a name the registry does not know). */
export interface PendingGatewayCall {
  call: ModelCall;
  entry: RegistryEntry | undefined;
  /** Set when the client approved this call in advance (MCP approvals). */
  approvalRequestId?: string;
  /** Already answered, nothing to run: a client call whose input failed its check (`inputCheck`). */
  outcome?: ToolOutcome;
  /** Why the call must not run (e.g. its approval was used up meanwhile): answered as an error. */
  refusal?: string;
}

/**
 * A validated turn, ready to run: everything that can fail with a 4xx has been checked. It does
 * not change once prepared (a run's changes are in its `TurnRun`), except for its registry,
 * which grows as a hosted tool_search loads deferred tools into it.
 */
export interface PreparedTurn {
  /** The tenant the turn runs for: what it reads must be that tenant's, what it stores becomes theirs. */
  readonly tenant: string;
  readonly request: CreateRequest;
  /** The request body as received (a queued background run can be prepared again elsewhere). */
  readonly body: unknown;
  readonly registry: ToolRegistry;
  /** The stored items this turn continues (the `previous_response_id` chain's, the conversation's). */
  readonly history: readonly Item[];
  /** This request's input items with ids (stored for input_items listing). */
  readonly inputItems: readonly Item[];
  /** History + input, as the model sees it (compacted when `context_management` asked for it). */
  readonly conversation: readonly ModelItem[];
  readonly base: Readonly<Omit<ModelRequest, 'items' | 'tools' | 'toolChoice'>>;
  /** What round 0 declares. */
  readonly tools: ModelRequest['tools'];
  /** Later rounds declare what the registry shows then (tools a hosted search loaded, mode `declare`); false for a chosen subset. */
  readonly toolsFollowRegistry: boolean;
  readonly toolChoice: ModelRequest['toolChoice'];
  /** Items produced before the first round (e.g. `mcp_list_tools`), emitted first. */
  readonly preludeItems: readonly Item[];
  /** Approval answers in this request's input: used up, and approved calls run, before the first round. */
  readonly approvedCalls: readonly ApprovedCall[];
  /** The lease this turn holds on its conversation, released when it ends (releasing is idempotent). */
  readonly conversationLease?: string;
  /** `context_management` compacted the conversation: its item leads the output. */
  readonly autoCompaction?: AutoCompaction;
}

/** What the caller of a run learns besides the response, filled in as the run goes. */
export interface RunOutcome {
  /** Why the turn failed, when a known failure ended it (a blocking client gets its HTTP status). */
  failure?: GatewayError;
  /** The stop string that ended the model's last output (surfaces that report it, e.g. Messages). */
  stopSequence?: string;
  /** The returned response's JSON, when the run made it (to be stored or announced): a blocking body sends this text. */
  responseJson?: string;
  /** The run's Response, as it is when each event is emitted (set when the run starts). */
  response?: ResponseObject;
}

/** One run of a prepared turn: everything that changes while it runs. Created when the run starts. */
export interface TurnRun {
  readonly turn: PreparedTurn;
  readonly hooks: RunHooks;
  /** Aborting it stops the run (registered with the ownership for a stored run). */
  readonly controller: TurnAbort;
  /**
   * What the model is sent this round: the turn's conversation, then each earlier round's output
   * and gateway results. The first round sends the turn's own list (never changed); the first
   * round that goes on copies it, and later rounds grow the copy (`runLoop`).
   */
  conversation: readonly ModelItem[];
  /** What the model saw of this run's gateway calls, kept with the stored items for later turns. */
  readonly callRecords: GatewayCallRecord[];
  /** The caller's `hooks.outcome`, or the run's own. */
  readonly outcome: RunOutcome;
  /** The stored run is registered as this process's (a background run always is): its writes are fenced. */
  owned: boolean;
  /** Inference rounds run so far (metrics and debug logs). */
  roundsRun: number;
}

export interface PrepareOptions {
  /** Whose turn this is (the API key's tenant): it sees only that tenant's objects; default tenant when absent. */
  tenant?: string;
  /**
   * Resolves `previous_response_id` to its chain (oldest first) before the store is asked —
   * e.g. a WebSocket connection's cache of its own `store: false` turns.
   */
  resolvePrevious?: (id: string) => Promise<readonly StoredResponse[] | undefined>;
  /**
   * Build the turn without side effects (token counting, compaction requests): no conversation
   * lease, no approval used up, no auto-compaction. Such a turn is not meant to be run.
   */
  dryRun?: boolean;
}

/** Finds a gateway call's model-facing record by its public item id. A `Map` is one. */
export interface CallRecordLookup {
  get(itemId: string): GatewayCallRecord | undefined;
}
