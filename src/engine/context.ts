import type { ImageUrlHandler } from '../net/image-inline.js';
import type { ResponseObject } from '../protocol/responses.js';
import type { ConversationStore } from '../store/conversations.js';
import type { ResponseStore } from '../store/store.js';
import type { DeclareContext } from '../tools/handler.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { RunOwnership } from './run-ownership.js';
import type { UnstoredCallRecords } from './unstored-records.js';
import type { Logger } from './types.js';

/** What the stages of a turn (prepare, loop, settle) share: the engine's parts and settings. */
export interface EngineContext {
  readonly upstream: UpstreamClient;
  readonly store: ResponseStore;
  readonly declare: DeclareContext;
  readonly options: EngineOptions;
  readonly log: Logger;
  readonly ownership: RunOwnership;
}

export interface EngineOptions {
  maxToolRounds: number;
  maxConcurrentGatewayCalls: number;
  /** Conversations (`conversation` on create); absent = not available. */
  conversations?: ConversationStore;
  /**
   * This process's runs and leases, heart-beaten (src/app.ts starts it). Absent: an engine of its
   * own, whose leases last long since nothing renews them.
   */
  ownership?: RunOwnership;
  /** What becomes of image URLs in the context before the model sees them (limits.imageUrls); absent = forwarded. */
  images?: ImageUrlHandler;
  /** What the model saw of the gateway calls of turns not stored (tools.unstoredResultsTtlMs); absent = nothing kept. */
  unstoredRecords?: UnstoredCallRecords;
  /** Told about every round and settled response (metrics); absent = nothing measured. */
  observer?: TurnObserver;
}

/** What the turn loop reports for metrics (src/observability/metrics.ts implements it). */
export interface TurnObserver {
  /** One inference round: upstream = sending to the end of its stream; gateway = the rest (tool calls, storage). */
  round(upstreamSeconds: number, gatewaySeconds: number): void;
  /** A response reached its terminal state after `rounds` inference rounds. */
  settled(response: ResponseObject, rounds: number): void;
}
