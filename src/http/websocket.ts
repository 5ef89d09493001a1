import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { Errors, GatewayError, invalidRequest, toGatewayError } from '../errors.js';
import { GatewayShutdown, type Engine } from '../engine/turn.js';
import type { Logger } from '../util/logger.js';
import { firstEvent } from '../util/events.js';
import type { ResponseStore, StoredResponse } from '../store/store.js';
import { writeErrorAndClose } from './client-errors.js';
import { parseClientMessage } from './json.js';
import type { ApiKey, KeyRing } from '../auth/key-ring.js';
import { DEFAULT_TENANT } from '../store/tenant.js';
import { authenticate } from './authenticate.js';
import type { Limiter } from './limiter.js';
import { TurnAbort } from '../util/abort.js';
import { deepFreeze } from '../util/freeze.js';
import { wireText } from '../util/utf8.js';

/**
 * WebSocket mode of the Responses API (responses-api.md §6): `GET /v1/responses` upgraded to a
 * WebSocket. The client sends text frames `{"type":"response.create", …create params…}` and
 * receives, per response, the same event JSON a streaming HTTP client gets in its `data:` lines.
 *
 * - One response in flight per connection (as OpenAI's WebSocket mode): a message received while a
 *   response runs is queued and handled after that response's terminal event. Every message —
 *   a bad one too — is answered in arrival order, so one response's events never interleave with
 *   another's or with an `error` event.
 * - Failures before a response starts (invalid JSON, unknown event type, validation errors,
 *   `previous_response_not_found`, an upstream refusing the first request) are one `error` event
 *   shaped per the spec's `WebSocketErrorEvent`; the socket stays open for the next request.
 *   Failures after the first event end that response with `response.failed`, as over SSE.
 * - `stream`/`stream_options` are implied and ignored; `background: true` is refused.
 * - Each connection keeps its own settled `completed`/`incomplete` responses (`store: false` ones
 *   included, at most CACHE_ENTRIES, least recently used dropped first) so a later
 *   `previous_response_id` on the same socket continues from them; other connections and the HTTP
 *   API see only stored responses. A continuation that fails (an error before its first event, or
 *   `response.failed`) evicts the response it continued. The cache is dropped on close.
 * - Closing the socket aborts the running response (stored as failed, `client_disconnected`) and
 *   drops the queued messages.
 * - A frame larger than `maxMessageBytes` closes the connection (1009, by `ws`).
 */
export interface ResponsesWebSocketDeps {
  engine: Engine;
  store: ResponseStore;
  log: Logger;
  /** Largest accepted client frame (`maxPayload`); larger ones close the connection with 1009. */
  maxMessageBytes: number;
  /** Keep-alive ping period; a connection that missed the previous pong is terminated. Default 30 s. */
  pingIntervalMs?: number;
  /** API keys: the upgrade must carry one while any key exists (a 401 before the handshake otherwise). */
  keys?: KeyRing;
  /** Each `response.create` counts against its key's rpm and takes a turn slot. */
  limiter?: Limiter;
}

export interface ResponsesWebSocket {
  /** Closes every connection (1001, running responses are aborted) and stops accepting upgrades. */
  close(): Promise<void>;
}

export const RESPONSES_WS_PATH = '/v1/responses';
const PING_INTERVAL_MS = 30_000;
/** Backpressure: the engine stops reading the upstream while this much is buffered for the client. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** Settled responses kept per connection for `previous_response_id`. */
const CACHE_ENTRIES = 256;
/** Queued messages per connection before the connection stops reading (resumes at half). */
const MAX_QUEUED = 16;
/** On close, how long a client gets to answer the close frame before its socket is cut. */
const CLOSE_GRACE_MS = 1_000;
/** Every event is a text frame, whether its payload is handed over as the string or as its bytes (utf8.ts). */
const TEXT_FRAME = { binary: false } as const;

/** Handles WebSocket upgrades on `RESPONSES_WS_PATH` of `server`; other upgrade paths get a 404. */
export function attachResponsesWebSocket(server: Server, deps: ResponsesWebSocketDeps): ResponsesWebSocket {
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.maxMessageBytes, perMessageDeflate: false });
  // a handshake `ws` refuses (wrong method, missing key, bad version …) is answered in the OpenAI shape
  wss.on('wsClientError', (err: Error, socket: Duplex) => {
    const status = /method/i.test(err.message) ? 405 : 400;
    writeErrorAndClose(socket, Errors.invalidWebSocketHandshake(err.message, status), status === 400 && /Version/.test(err.message) ? { 'Sec-WebSocket-Version': '13, 8' } : {});
  });
  const connections = new Set<Connection>();
  let closing = false;

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    if (path !== RESPONSES_WS_PATH || closing) {
      writeErrorAndClose(
        socket,
        closing
          ? Errors.shuttingDown()
          : Errors.unknownUrl(`No WebSocket endpoint at ${path.slice(0, 200)}; use ${RESPONSES_WS_PATH}.`),
      );
      return;
    }
    let key: ApiKey | undefined;
    try {
      if (deps.keys?.enabled) {
        key = authenticate(deps.keys, req);
        deps.limiter?.request(key, undefined);
      }
    } catch (err) {
      writeErrorAndClose(socket, toGatewayError(err), err instanceof GatewayError && err.status === 429 ? { 'Retry-After': '1' } : {});
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (closing) {
        ws.close(1001, 'Server shutting down');
        return;
      }
      const connection = new Connection(ws, socket, req, deps, key);
      connections.add(connection);
      ws.once('close', () => connections.delete(connection));
    });
  };
  server.on('upgrade', onUpgrade);

  const heartbeat = setInterval(() => {
    for (const connection of connections) connection.heartbeat();
  }, deps.pingIntervalMs ?? PING_INTERVAL_MS);
  heartbeat.unref();

  return {
    async close() {
      if (closing) return;
      closing = true;
      server.off('upgrade', onUpgrade);
      clearInterval(heartbeat);
      await Promise.all([...connections].map((c) => c.shutdown()));
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** One client connection: a queue of messages handled one at a time, and its response cache. */
class Connection {
  private readonly queue: Buffer[] = [];
  private running = false;
  private closed = false;
  private alive = true;
  private current: TurnAbort | undefined;
  private readonly cache = new Map<string, readonly StoredResponse[]>();
  private corked = false;
  /** The upgrade's `Authorization` header, for when the gateway authenticates clients. */
  readonly authorization: string | undefined;

  constructor(
    private readonly ws: WebSocket,
    /** The upgraded TCP socket (the one `ws` writes to): corked per tick, watched for `drain`. */
    private readonly socket: Duplex,
    req: IncomingMessage,
    private readonly deps: ResponsesWebSocketDeps,
    /** The key the upgrade was authenticated with: every response of the socket is its tenant's. */
    private readonly key: ApiKey | undefined,
  ) {
    this.authorization = req.headers.authorization;
    // binary frames are read as UTF-8 text too (lenient: some clients send their JSON that way)
    ws.on('message', (data) => this.onMessage(data));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', (err) => deps.log.warn({ err: err.message }, 'websocket connection error'));
    ws.on('close', () => this.onClose());
  }

  heartbeat(): void {
    if (this.closed) return;
    // a paused connection does not read its pongs: it is alive as long as it has work queued
    if (!this.alive && !this.ws.isPaused) {
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.ws.ping();
  }

  /** Aborts the running response, drops the queue and closes with 1001 (cut after a grace period). */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    const closed = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    // the running turn ends with its terminal event (failed: gateway shutting down) before the close
    this.current?.abort(new GatewayShutdown());
    for (let waited = 0; this.current && waited < CLOSE_GRACE_MS; waited += 10) await new Promise((r) => setTimeout(r, 10));
    this.stop();
    this.ws.close(1001, 'Server shutting down');
    const cut = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    await closed;
    clearTimeout(cut);
  }

  private onMessage(data: RawData): void {
    if (this.closed) return;
    this.alive = true;
    this.queue.push(rawBytes(data));
    if (this.queue.length >= MAX_QUEUED && !this.ws.isPaused) this.ws.pause();
    void this.pump();
  }

  private onClose(): void {
    this.stop();
  }

  private stop(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.cache.clear();
    this.current?.abort();
  }

  /** Handles queued messages one after the other; only one pump runs at a time. */
  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (!this.closed && this.queue.length > 0) {
        const bytes = this.queue.shift()!;
        if (this.ws.isPaused && this.queue.length <= MAX_QUEUED / 2) this.ws.resume();
        try {
          await this.handle(bytes);
        } catch (err) {
          this.deps.log.error({ err }, 'websocket message handling failed');
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async handle(bytes: Buffer): Promise<void> {
    let message: unknown;
    try {
      message = parseClientMessage(bytes);
    } catch (err) {
      this.sendError(err, 0);
      return;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      this.sendError(invalidRequest('The message must be a JSON object.', null, 'invalid_type'), 0);
      return;
    }
    const { type, stream: _stream, stream_options: _streamOptions, ...params } = message as Record<string, unknown>;
    if (type !== 'response.create') {
      this.sendError(invalidRequest(`Invalid 'type': ${JSON.stringify(type) ?? 'undefined'}. Supported values are: 'response.create'.`, 'type', 'invalid_value'), 0);
      return;
    }
    const continued = typeof params.previous_response_id === 'string' ? params.previous_response_id : undefined;
    if (params.background === true) {
      this.forget(continued);
      this.sendError(invalidRequest('Background responses are not supported in WebSocket mode.', 'background', 'unsupported_parameter'), 0);
      return;
    }
    const body = { ...params, stream: true };

    let release: (() => void) | undefined;
    try {
      if (this.key) this.deps.limiter?.request(this.key, undefined);
      release = this.deps.limiter?.turn(this.key);
    } catch (err) {
      this.forget(continued);
      this.sendError(err, 0);
      return;
    }
    const controller = new TurnAbort();
    this.current = controller;
    let sent = 0;
    const sink = (_type: string, json: string): void => {
      sent++;
      this.send(json);
    };
    try {
      // the chain this turn continues, from the cache or the store, is what its own entry extends
      let parentChain: readonly StoredResponse[] | undefined;
      const resolvePrevious = async (id: string) => (parentChain = (await this.resolvePrevious(id)) ?? (await this.deps.store.chain(id)));
      const turn = await this.deps.engine.prepare(body, controller, { resolvePrevious, tenant: this.key?.tenant ?? DEFAULT_TENANT });
      await this.deps.engine.run(turn, sink, controller, () => this.drained(), {
        controller,
        onSettled: (record) => {
          if (record.response.status === 'completed' || record.response.status === 'incomplete') this.remember(record, parentChain);
          else this.forget(continued);
        },
      });
    } catch (err) {
      this.forget(continued);
      if (!(err instanceof GatewayError) || sent > 0) this.deps.log.error({ err }, 'websocket turn failed');
      // before the first event this is the request's answer; after it (an engine bug) it still ends the stream
      this.sendError(err, sent);
    } finally {
      release?.();
      if (this.current === controller) this.current = undefined;
    }
  }

  /**
   * `previous_response_id` from this connection's cache. Each entry holds its whole chain (the
   * records are shared, so that is a list of references), so evicting an old entry never cuts the
   * history of a newer one; an id that is not cached is left to the store.
   */
  private async resolvePrevious(id: string): Promise<readonly StoredResponse[] | undefined> {
    const chain = this.cache.get(id);
    if (!chain) return undefined; // the engine asks the store
    this.touch(id, chain);
    return chain;
  }

  /** Caches a settled response with the chain it continued (resolved for its own turn). */
  private remember(record: StoredResponse, parentChain: readonly StoredResponse[] | undefined): void {
    if (this.closed) return;
    // held as the store's chain cache holds a record: decoded from its JSON and frozen, so the
    // next turns reuse its model items and kept bytes (engine/held-history.ts) instead of
    // converting and encoding the connection's whole history again on every turn
    const held = deepFreeze(JSON.parse(JSON.stringify(record)) as StoredResponse);
    this.touch(held.response.id, [...(parentChain ?? []), held]);
    while (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
  }

  /**
   * A continuation failed (4xx or 5xx, before or after its first event): the response it continued
   * leaves the cache, so stale state is not reused — continuing from it again is answered from the
   * store alone (`previous_response_not_found` for a `store: false` one).
   */
  private forget(id: string | undefined): void {
    if (id !== undefined) this.cache.delete(id);
  }

  /** Marks an entry most recently used (a Map iterates in insertion order). */
  private touch(id: string, chain: readonly StoredResponse[]): void {
    this.cache.delete(id);
    this.cache.set(id, chain);
  }

  private send(json: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    // the events of one upstream chunk leave in one syscall
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    this.ws.send(wireText(json), TEXT_FRAME);
  }

  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  /** Resolves once the client has taken the buffered events (undefined when below the mark). */
  private drained(): Promise<void> | undefined {
    if (this.ws.readyState !== WebSocket.OPEN || this.ws.bufferedAmount < HIGH_WATER_BYTES) return undefined;
    // above the mark a write has returned false, so the socket emits `drain` once it empties
    if (!this.socket.writableNeedDrain) return undefined;
    return firstEvent([this.socket, 'drain'], [this.ws, 'close']);
  }

  /** One `error` event (the spec's WebSocketErrorEvent, plus `sequence_number`). */
  private sendError(err: unknown, sequenceNumber: number): void {
    const known = toGatewayError(err);
    this.send(
      JSON.stringify({
        type: 'error',
        sequence_number: sequenceNumber,
        status: known.status,
        error: { type: known.type, code: known.code ?? known.type, message: known.message, param: known.param },
      }),
    );
  }
}

function rawBytes(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return data;
}
