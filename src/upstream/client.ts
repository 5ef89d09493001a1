import type { GrammarField, ModelRequest, RawEvent } from '../protocol/model.js';
import type { Cancellation } from '../util/abort.js';

/**
 * An upstream round's raw events, a batch per network chunk. `read()` returns the next batch at
 * once when it is already there and a promise of it otherwise, and null at the end; it throws
 * (or rejects with) the GatewayError that ended the stream. `for await` reads it too.
 */
export interface RawEventStream extends AsyncIterable<RawEvent[]> {
  read(): RawEvent[] | null | Promise<RawEvent[] | null>;
  /** Stops reading before the end: releases the upstream connection. Safe to call at any point, and again. */
  close(): void;
}

/** An inference server behind one dialect. */
export interface UpstreamClient {
  /**
   * Sends the request and resolves once the upstream has accepted it (a 2xx status); failures
   * before that reject as GatewayError — never a synchronous throw, which the router's failover
   * (a chain of callbacks) would not see. The events come in batches, one per network chunk.
   */
  open(request: ModelRequest, signal: Cancellation): Promise<RawEventStream>;
  /** The upstream's `GET /models` list, as it answers it. */
  listModels(signal: AbortSignal): Promise<unknown>;
  /**
   * Whether `model`'s upstream decodes under a grammar (`ModelRequest.grammar`): probed once per
   * upstream. Absent = never (e.g. the Responses dialect).
   */
  grammarSupport?(model: string, signal: Cancellation): Promise<GrammarField | undefined>;
  close(): Promise<void>;
}

/** How the gateway talks to one upstream (the `upstream.*` transport keys). */
export interface UpstreamTransport {
  connectTimeoutMs: number;
  /** From sending the request to the first event. */
  firstTokenTimeoutMs: number;
  /** Longest silence between two chunks of a started stream. */
  idleTimeoutMs: number;
  /** Retries of connection failures and 5xx, only before the upstream's first byte. */
  maxRetries: number;
  retryBaseDelayMs: number;
  /** Most upstream connections at once; 0 = no limit (one per open stream). */
  connections: number;
}

export interface UpstreamOptions extends UpstreamTransport {
  baseUrl: string;
  apiKey?: string;
}
