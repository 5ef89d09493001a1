import type { GatewayError } from '../errors.js';
import type { ModelItem, ModelRequest } from '../protocol/model.js';
import type { CompactionItem, Item, ResponseObject, Usage } from '../protocol/responses.js';
import type { GatewayCallRecord, StoredResponse, StreamEvent } from '../store/store.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { ApprovedCall } from './approvals.js';
import type { CreateRequest } from './request.js';
import type { Logger } from '../util/logger.js';

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
  controller?: AbortController;
}

/** The abort reason of runs stopped because the gateway is shutting down. */
export class GatewayShutdown extends Error {
  constructor() {
    super('The gateway shut down before this response finished.');
  }
}

/** A validated turn, ready to run: everything that can fail with a 4xx has been checked. */
export interface PreparedTurn {
  /** The tenant the turn runs for: what it reads must be that tenant's, what it stores becomes theirs. */
  tenant: string;
  request: CreateRequest;
  /** The request body as received (a queued background run can be prepared again elsewhere). */
  body: unknown;
  registry: ToolRegistry;
  /** This request's input items with ids (stored for input_items listing). */
  inputItems: Item[];
  /** History + input, as the model sees it. */
  conversation: ModelItem[];
  base: Omit<ModelRequest, 'items' | 'tools' | 'toolChoice'>;
  tools: ModelRequest['tools'];
  /** Later rounds declare what the registry shows then (tools a hosted search loaded, mode `declare`); false for a chosen subset. */
  toolsFollowRegistry?: boolean;
  toolChoice: ModelRequest['toolChoice'];
  /** Items produced before the first round (e.g. `mcp_list_tools`), emitted first. */
  preludeItems: Item[];
  /** Approval answers in this request's input: used up, and approved calls run, before the first round. */
  approvedCalls: ApprovedCall[];
  /** What the model saw of this turn's gateway calls, kept with the stored items for later turns. */
  callRecords: GatewayCallRecord[];
  /** Set by `run`. */
  hooks?: RunHooks;
  /** Set by `run`: aborting it stops the run (registered with the ownership for a stored run). */
  runController?: AbortController;
  /** The stored run is registered as this process's (a background run always is): its writes are fenced. */
  owned?: boolean;
  /** The lease this turn holds on its conversation, released when it ends. */
  conversationLease?: string;
  /** Why the turn failed, when a known failure ended it (a blocking client gets its HTTP status). */
  failure?: GatewayError;
  /** Set by each round: the stop string that ended the model's last output (surfaces that report it, e.g. Messages). */
  stopSequence?: string;
  /** `context_management` compacted the conversation: its item leads the output. */
  autoCompaction?: AutoCompaction;
  /** Inference rounds run so far (metrics and debug logs). */
  roundsRun?: number;
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
