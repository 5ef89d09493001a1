import type { Dispatcher } from 'undici';
import { Errors, GatewayError } from '../errors.js';
import type { GrammarField, ModelRequest } from '../protocol/model.js';
import type { RawEventStream, UpstreamClient } from './client.js';
import type { UpstreamTransport } from './http.js';
import type { Cancellation } from '../util/abort.js';

/** One configured upstream behind the router. */
export interface RoutedUpstream {
  name: string;
  client: UpstreamClient;
  /** The same upstream's HTTP side, for pass-through routes. */
  transport: UpstreamTransport;
  /** The models it serves; `*` = any (its own `/models` list is shown). */
  models: '*' | readonly string[];
}

export interface ModelAlias {
  upstream: string;
  model: string;
  fallbacks: ReadonlyArray<{ upstream: string; model: string }>;
}

/** Where a request for one model may go, in the order to try. */
export interface Candidate {
  upstream: RoutedUpstream;
  /** The model name that upstream knows it by. */
  model: string;
}

export interface RouterEvents {
  /** A candidate failed before its first byte and the next one is tried. */
  failover?(from: string, to: string, model: string, reason: string): void;
}

/** An upstream that answered within this window counts as reachable for `/ready`. */
const REACHABLE_WINDOW_MS = 30_000;
const MAX_CACHED_ROUTES = 1_000;

/**
 * The UpstreamClient the engine talks to when several upstreams are configured: each request is
 * routed by its `model` (an alias, or the upstreams that list it, in config order, then those
 * serving `*`). A connection failure or 5xx before the first byte moves on to the next
 * candidate; once a stream has started it is that upstream's.
 */
export class UpstreamRouter implements UpstreamClient {
  private readonly aliases: Map<string, ModelAlias>;
  private readonly byName: Map<string, RoutedUpstream>;
  private readonly routes = new Map<string, readonly Candidate[]>();
  private readonly lastOkAt = new Map<string, number>();

  constructor(
    readonly upstreams: readonly RoutedUpstream[],
    aliases: Record<string, ModelAlias> = {},
    private readonly events: RouterEvents = {},
  ) {
    if (upstreams.length === 0) throw new Error('at least one upstream is needed');
    this.byName = new Map(upstreams.map((u) => [u.name, u]));
    this.aliases = new Map(Object.entries(aliases));
    for (const [alias, target] of this.aliases) {
      for (const t of [target, ...target.fallbacks]) if (!this.byName.has(t.upstream)) throw new Error(`models.${alias}: no upstream named '${t.upstream}'`);
    }
  }

  /** The candidates for a model name, in order; empty = no upstream serves it. */
  candidates(model: string): readonly Candidate[] {
    const cached = this.routes.get(model);
    if (cached) return cached;
    let list: Candidate[];
    const alias = this.aliases.get(model);
    if (alias) {
      list = [alias, ...alias.fallbacks].map((t) => ({ upstream: this.byName.get(t.upstream)!, model: t.model }));
    } else {
      const listing = this.upstreams.filter((u) => u.models !== '*' && u.models.includes(model));
      const anyModel = this.upstreams.filter((u) => u.models === '*');
      list = [...listing, ...anyModel].map((upstream) => ({ upstream, model }));
    }
    // client-chosen names: bounded, so a stream of invented names cannot grow it forever
    if (this.routes.size < MAX_CACHED_ROUTES) this.routes.set(model, list);
    return list;
  }

  open(request: ModelRequest, signal: Cancellation): Promise<RawEventStream> {
    let candidates: readonly Candidate[];
    try {
      candidates = this.candidatesOrThrow(request.model);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.openFrom(candidates, 0, request, signal);
  }

  /** Candidate `i` opens the stream, or on a failure that moves on, the next one (a chain of callbacks: no async layer on every round's way). */
  private openFrom(candidates: readonly Candidate[], i: number, request: ModelRequest, signal: Cancellation): Promise<RawEventStream> {
    const { upstream, model } = candidates[i];
    return upstream.client.open(model === request.model ? request : { ...request, model }, signal).then(
      (events) => {
        this.lastOkAt.set(upstream.name, Date.now());
        return events;
      },
      (err: unknown) => {
        if (i + 1 >= candidates.length || signal.aborted || !movesOn(err, upstream)) throw err;
        this.events.failover?.(upstream.name, candidates[i + 1].upstream.name, request.model, (err as Error).message);
        return this.openFrom(candidates, i + 1, request, signal);
      },
    );
  }

  /** The first candidate's answer (a failover target decides for itself whether it sends the grammar). */
  async grammarSupport(model: string, signal: Cancellation): Promise<GrammarField | undefined> {
    const first = this.candidates(model)[0];
    return first?.upstream.client.grammarSupport?.(first.model, signal);
  }

  /**
   * A pass-through request (`/chat/completions`, `/embeddings`): the client's body goes to the
   * first candidate that answers below 500 (the model renamed when an alias says so); the last
   * candidate's answer is returned whatever it is.
   */
  async forward(path: string, body: Buffer, model: string, signal: AbortSignal, parsed: Record<string, unknown>): Promise<{ upstream: string; response: Dispatcher.ResponseData }> {
    const candidates = this.candidatesOrThrow(model);
    for (let i = 0; ; i++) {
      const { upstream, model: upstreamModel } = candidates[i];
      const last = i + 1 >= candidates.length;
      let response: Dispatcher.ResponseData;
      try {
        response = await upstream.transport.forward(path, upstreamModel === model ? body : JSON.stringify({ ...parsed, model: upstreamModel }), signal);
      } catch (err) {
        if (last || signal.aborted || !movesOn(err, upstream)) throw err;
        this.events.failover?.(upstream.name, candidates[i + 1].upstream.name, model, (err as Error).message);
        continue;
      }
      const wrongUpstream = response.statusCode >= 500 || (response.statusCode === 404 && upstream.models === '*');
      if (!wrongUpstream) this.lastOkAt.set(upstream.name, Date.now());
      if (last || !wrongUpstream) return { upstream: upstream.name, response };
      await response.body.dump().catch(() => undefined);
      this.events.failover?.(upstream.name, candidates[i + 1].upstream.name, model, `status ${response.statusCode}`);
    }
  }

  /** Every model served: each upstream's list (asked of `*` upstreams, configured otherwise), then the aliases. */
  async listModels(signal: AbortSignal): Promise<unknown> {
    const lists = await Promise.all(
      this.upstreams.map(async (upstream) => {
        if (upstream.models !== '*') return { ok: true as const, data: upstream.models.map((id) => ({ id, object: 'model', created: 0, owned_by: upstream.name })) };
        try {
          const answer = (await upstream.client.listModels(signal)) as { data?: unknown };
          this.lastOkAt.set(upstream.name, Date.now());
          return { ok: true as const, data: Array.isArray(answer?.data) ? (answer.data as Array<Record<string, unknown>>) : [] };
        } catch (err) {
          return { ok: false as const, err };
        }
      }),
    );
    const seen = new Set<string>();
    const data: Array<Record<string, unknown>> = [];
    const add = (entry: Record<string, unknown>) => {
      if (typeof entry.id !== 'string' || seen.has(entry.id)) return;
      seen.add(entry.id);
      data.push(entry);
    };
    for (const list of lists) if (list.ok) list.data.forEach(add);
    for (const alias of this.aliases.keys()) add({ id: alias, object: 'model', created: 0, owned_by: 'switchyard' });
    // nothing to show and nobody answered: the operator should see why
    const failure = lists.find((l) => !l.ok);
    if (data.length === 0 && failure && !failure.ok) throw failure.err;
    return { object: 'list', data };
  }

  /** Whether some upstream answered recently; if none did, asks each one's `/models` now. */
  async reachable(signal: AbortSignal): Promise<{ ok: boolean; reason?: string }> {
    const now = Date.now();
    for (const at of this.lastOkAt.values()) if (now - at < REACHABLE_WINDOW_MS) return { ok: true };
    const probes = await Promise.all(
      this.upstreams.map(async (upstream) => {
        try {
          await upstream.client.listModels(signal);
          this.lastOkAt.set(upstream.name, Date.now());
          return undefined;
        } catch (err) {
          return `${upstream.name}: ${(err as Error).message}`;
        }
      }),
    );
    const failures = probes.filter((p): p is string => p !== undefined);
    return failures.length < probes.length ? { ok: true } : { ok: false, reason: `no upstream reachable (${failures.join('; ')})` };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.upstreams.map((u) => u.client.close()));
  }

  private candidatesOrThrow(model: string): readonly Candidate[] {
    const candidates = this.candidates(model);
    if (candidates.length === 0) {
      throw Errors.modelNotFound(model);
    }
    return candidates;
  }
}

/** Failures before the first byte that another candidate may not have: unreachable, 5xx, timeouts — and "no such model" from a `*` upstream. */
function movesOn(err: unknown, upstream: RoutedUpstream): boolean {
  if (!(err instanceof GatewayError)) return false;
  if (err.status === 502 || err.status === 503 || err.status === 504) return true;
  return err.status === 404 && upstream.models === '*';
}
