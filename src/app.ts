import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { effectiveUpstreams, missingV1, type Config } from './config/config.js';
import { listenStartupError, storeStartupError } from './config/startup-errors.js';
import { BackgroundRunner } from './engine/background.js';
import { RunOwnership } from './engine/run-ownership.js';
import { Engine, GatewayShutdown, type TurnObserver } from './engine/turn.js';
import { UnstoredCallRecords } from './engine/unstored-records.js';
import { InflightTurns } from './http/inflight.js';
import { opsRoutes, type Readiness } from './http/ops-routes.js';
import { passthroughRoutes } from './http/passthrough-routes.js';
import { createDispatch, type Dispatch } from './http/dispatch.js';
import { createHttpServer, type HttpDeps } from './http/server.js';
import { RequestObserver } from './observability/access-log.js';
import { countStoreErrors, instrumentMcp, timedExecution } from './observability/instrument.js';
import { GatewayMetrics } from './observability/metrics.js';
import { Tracing } from './observability/tracing.js';
import { batchedStdout } from './observability/log-destination.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { attachResponsesWebSocket } from './http/websocket.js';
import { McpService } from './mcp/service.js';
import { createImageUrlHandler } from './net/image-inline.js';
import { setUpWebSearch } from './tools/web-search/setup.js';
import { setUpCodeInterpreter } from './tools/code-interpreter/setup.js';
import { containerRoutes } from './http/containers-routes.js';
import { setUpFileSearch } from './tools/file-search/setup.js';
import { startSimulator, type Simulator } from './simulate/server.js';
import { openStores } from './store/open-stores.js';
import { RetentionSweeper } from './store/retention.js';
import { KeyRing } from './auth/key-ring.js';
import { openKeyStore } from './auth/open-key-store.js';
import { Limiter } from './http/limiter.js';
import { StartupError } from './config/startup-errors.js';
import { parseDuration } from './util/duration.js';
import { conversationRoutes } from './http/conversations-routes.js';
import { compactRoutes } from './http/compact-routes.js';
import { compactionTriggerHandler } from './http/compaction-trigger.js';
import { messagesRoutes } from './http/messages-routes.js';
import { withCodexCatalog } from './http/codex-models-route.js';
import { filesRoutes } from './http/files-routes.js';
import { vectorStoresRoutes } from './http/vector-stores-routes.js';
import type { ResponseStore } from './store/store.js';
import type { DeclareContext, ExecutionFactory } from './tools/handler.js';
import { ChatCompletionsUpstream } from './upstream/chat-completions.js';
import { ResponsesUpstream } from './upstream/responses.js';
import { UpstreamRouter, type RoutedUpstream } from './upstream/router.js';

export type { ExecutionFactory };

export interface GatewayOptions {
  config: Config;
  logger?: pino.Logger;
  /** Execution sides of gateway-owned tool types, by canonical type (`web_search`, `mcp`, …). */
  executions?: Record<string, ExecutionFactory>;
  /** Replaces the configured store (tests, embedding). */
  store?: ResponseStore;
  /** Sends traces here instead of `tracing.otlpEndpoint` (tests: an in-memory exporter). */
  traceExporter?: SpanExporter;
}

export interface Gateway {
  url: string;
  port: number;
  config: Config;
  /** The built-in simulated model, when no upstream is configured. */
  simulator: Simulator | undefined;
  /** Prometheus metrics (undefined when `metrics.enabled` is false). */
  metrics: GatewayMetrics | undefined;
  /** Answers one request without a socket (route tests): the function the HTTP server calls. */
  dispatch: Dispatch;
  close(): Promise<void>;
}

/** How long readiness waits for the store before calling it unreachable. */
const READY_STORE_TIMEOUT_MS = 3_000;
/** After the grace period, how long cut turns get to emit and store their terminal event. */
const CUT_SETTLE_MS = 3_000;

/** The composition root: config → store, upstreams, engine, HTTP server. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const log = options.logger ?? pino({ level: config.logLevel }, batchedStdout());
  const debug = log.isLevelEnabled('debug') ? (obj: object, msg: string) => log.debug(obj, msg) : undefined;
  let background: BackgroundRunner | undefined;
  const metrics = config.metrics.enabled ? new GatewayMetrics({ backgroundRuns: () => background?.activeRuns ?? 0 }) : undefined;
  // traces only when asked for: with no endpoint, nothing is created and nothing is called
  const tracing = config.tracing.otlpEndpoint || options.traceExporter ? new Tracing({ endpoint: config.tracing.otlpEndpoint, exporter: options.traceExporter, serviceName: config.tracing.serviceName }) : undefined;
  const onTool = tracing ? tracing.tool.bind(tracing) : undefined;

  // upstreams: the configured list, or the built-in simulator when none is configured
  let simulator: Simulator | undefined;
  const entries = effectiveUpstreams(config);
  if (entries[0].url === null) {
    simulator = await startSimulator({ port: 0 });
    entries[0] = { ...entries[0], url: simulator.url };
    log.info({ upstream: simulator.url }, 'no upstream configured: using the built-in simulated model (set --upstream to use a real one)');
  }
  const routed: RoutedUpstream[] = entries.map((entry) => {
    const url = entry.url!;
    if (missingV1(url)) {
      log.warn({ upstream: entry.name, url }, `upstream '${entry.name}': ${url} has no /v1 in its path, so requests go to ${url.replace(/\/+$/, '')}/chat/completions; OpenAI-compatible servers usually want ${url.replace(/\/+$/, '')}/v1`);
    }
    const transport = { ...entry, baseUrl: url };
    const client = entry.api === 'responses' ? new ResponsesUpstream(transport) : new ChatCompletionsUpstream(transport, entry.reasoningReplay);
    return { name: entry.name, client, transport: client.transport, models: entry.models };
  });
  const upstream = new UpstreamRouter(routed, config.models, {
    failover: (from, to, model, reason) => {
      metrics?.failover(from);
      log.warn({ from, to, model, reason }, 'upstream failed before its first byte: trying the next candidate');
    },
  });
  const primary = entries[0];

  let stores: Awaited<ReturnType<typeof openStores>>;
  try {
    stores = await openStores(config.store, config.dataDir, (err) => log.warn({ err }, 'store: idle connection error'));
  } catch (err) {
    await Promise.allSettled([upstream.close(), simulator?.close()]);
    throw storeStartupError(err, config);
  }
  // API keys: the config's and the store's (`switchyard keys create`); none at all = auth off
  const keys = new KeyRing(config.auth.keys, await openKeyStore(stores.responses), log);
  try {
    await keys.start(config.auth.refreshMs);
  } catch (err) {
    keys.close();
    await Promise.allSettled([stores.conversations.close(), stores.responses.close(), upstream.close(), simulator?.close()]);
    throw storeStartupError(err, config);
  }
  if (!keys.enabled && !isLoopback(config.host) && !config.auth.insecureNoAuth) {
    keys.close();
    await Promise.allSettled([stores.conversations.close(), stores.responses.close(), upstream.close(), simulator?.close()]);
    throw new StartupError(
      `refusing to serve ${config.host} without API keys (anyone who can reach it could read and delete every response): add auth.keys or run 'switchyard keys create NAME', listen on 127.0.0.1, or pass --insecure-no-auth`,
    );
  }
  const limiter = new Limiter({ maxConcurrentTurns: config.limits.maxConcurrentTurns, maxOpenStreams: config.limits.maxOpenStreams });
  const rawStore = options.store ?? stores.responses;
  const store = metrics ? countStoreErrors(rawStore, metrics) : rawStore;
  const conversations = metrics ? countStoreErrors(stores.conversations, metrics) : stores.conversations;

  const executions: Record<string, ExecutionFactory> = { ...options.executions };
  const mcp = new McpService({ ...config.mcp, callTimeoutMs: config.tools.timeoutsMs.mcp ?? config.mcp.callTimeoutMs });
  if (metrics || debug || onTool) instrumentMcp(mcp, metrics, debug, onTool);
  const webSearch = setUpWebSearch(config.webSearch, mcp, config.tools.timeoutsMs.web_search ?? Math.max(config.webSearch.timeoutMs, config.webSearch.pageTimeoutMs) + 5_000);
  if (webSearch && !executions.web_search) executions.web_search = webSearch;
  const fileSearch = await setUpFileSearch(config, upstream, log);
  if (!executions.file_search) executions.file_search = fileSearch.execution;
  const codeInterpreter = config.codeInterpreter.enabled
    ? await setUpCodeInterpreter(config.codeInterpreter, config.dataDir, stores.responses, log, {
        perCallTimeoutMs: config.tools.timeoutsMs.code_interpreter,
        // input `file_ids` are copied in from the Files API (the uploader's files only)
        files: {
          async read(fileId, owner) {
            const file = await fileSearch.store.getFile(owner, fileId);
            return file ? { filename: file.filename, data: await fileSearch.blobs.readAll(file.id) } : undefined;
          },
        },
      })
    : undefined;
  if (codeInterpreter && !executions.code_interpreter) executions.code_interpreter = codeInterpreter.execution;
  const logged = new Set<string>();
  const declare: DeclareContext = {
    executionFor: (type, declaration, request = { include: [] }) => {
      const execution = executions[type]?.(declaration, request);
      if (!execution) return undefined;
      // the operator's per-type timeout wins over the executor's own default
      const timeoutMs = config.tools.timeoutsMs[type] ?? execution.timeoutMs ?? config.tools.defaultTimeoutMs;
      if (timeoutMs === execution.timeoutMs && !metrics && !debug && !onTool) return execution;
      return timedExecution(type, execution, metrics, debug, timeoutMs, onTool);
    },
    logOnce: (key, message) => {
      // keys can come from clients (unknown tool types): bounded so they cannot grow it forever
      if (logged.has(key) || logged.size >= 1_000) return;
      logged.add(key);
      log.warn({ tool: key }, message);
    },
    mcp,
    grammar: { policy: config.tools.grammar, log: (message, fields) => log.warn(fields, message) },
    toolSearch: config.tools.toolSearch,
  };
  // this process's runs and conversation leases, heart-beaten: a dead process holds nothing for long
  const ownership = new RunOwnership(store, conversations, log, config.background);
  const images = createImageUrlHandler({ mode: config.limits.imageUrls, maxBytes: config.limits.maxImageBytes, outbound: config.limits.imageOutbound });
  const engine = new Engine(
    upstream,
    store,
    declare,
    {
      maxToolRounds: config.tools.maxToolRounds,
      maxConcurrentGatewayCalls: config.tools.maxConcurrentGatewayCalls,
      conversations,
      ownership,
      images,
      unstoredRecords: new UnstoredCallRecords({ ttlMs: config.tools.unstoredResultsTtlMs, maxBytes: config.tools.unstoredResultsMaxBytes }),
      observer: turnObserver(metrics, tracing),
    },
    log,
  );
  background = new BackgroundRunner(engine, store, log, config.background);
  background.start();
  await ownership.start();
  // age-based pruning, when `store.retention` is set
  const retention = config.store.retention
    ? new RetentionSweeper(store, conversations, { maxAgeMs: parseDuration(config.store.retention)!, intervalMs: config.store.retentionSweepMs, batchSize: config.store.retentionBatch }, log)
    : undefined;
  retention?.start();
  const runner = background;
  // every model served: each upstream's list merged, aliases included
  const listModels = () => upstream.listModels(AbortSignal.timeout(primary.connectTimeoutMs + 5_000));

  let closing = false;
  const inflight = new InflightTurns();
  const ready = async (): Promise<Readiness> => {
    if (closing) return { ok: false, reason: 'shutting down' };
    try {
      await withTimeout(store.get('resp_readiness_probe'), READY_STORE_TIMEOUT_MS, 'no answer');
    } catch (err) {
      return { ok: false, reason: `store unreachable: ${(err as Error).message}` };
    }
    return upstream.reachable(AbortSignal.timeout(primary.connectTimeoutMs + 2_000));
  };
  const compactDeps = { engine, upstream, upstreamBaseUrl: primary.url!, maxBodyBytes: config.limits.maxBodyBytes, upstreamApiKey: primary.apiKey, reasoningReplay: primary.reasoningReplay };
  const httpDeps: HttpDeps = {
    // Codex's remote compaction: a create request ending in compaction_trigger
    compactOnTrigger: compactionTriggerHandler(compactDeps),
    engine,
    store,
    background: runner,
    inflight,
    maxBodyBytes: config.limits.maxBodyBytes,
    connectionLimits: config.limits,
    log,
    observer: new RequestObserver(log, metrics, log.isLevelEnabled('info')),
    isClosing: () => closing,
    keys,
    limiter,
    wrap: tracing ? tracing.run.bind(tracing) : undefined,
    health: () => ({ status: 'ok', upstream: simulator ? 'simulated' : primary.url, upstream_api: primary.api, upstreams: entries.map((e) => e.name) }),
    routes: [
      ...opsRoutes({ ready, metrics }),
      ...passthroughRoutes(upstream, config.limits.maxBodyBytes),
      ...filesRoutes({ store: fileSearch.store, blobs: fileSearch.blobs, maxUploadBytes: config.files.maxUploadBytes }),
      ...vectorStoresRoutes({ store: fileSearch.store, retriever: fileSearch.retriever, rewriter: fileSearch.rewriter, notifyIngestion: () => fileSearch.ingestion.notify(), maxBodyBytes: config.limits.maxBodyBytes, pollAfterMs: config.fileSearch.pollAfterMs }),
      ...conversationRoutes(conversations, config.limits.maxBodyBytes),
      ...(codeInterpreter ? containerRoutes(codeInterpreter.service, { maxBodyBytes: config.limits.maxBodyBytes, maxUploadBytes: config.codeInterpreter.maxUploadBytes }) : []),
      // token counting asks the first upstream's /tokenize (vLLM)
      ...compactRoutes(compactDeps),
      // the Anthropic Messages surface over the same engine (and GET /v1/models in its shape when asked)
      // …and in the shape of a Codex model catalog with ?client=codex
      ...withCodexCatalog(messagesRoutes({ engine, log, maxBodyBytes: config.limits.maxBodyBytes, listModels, upstreamBaseUrl: primary.url!, upstreamApiKey: primary.apiKey, reasoningReplay: primary.reasoningReplay }), listModels, config.clients),
    ],
    listModels,
  };
  const dispatch = createDispatch(httpDeps);
  const server = createHttpServer(httpDeps, dispatch);
  const responsesWs = attachResponsesWebSocket(server, { engine, store, log, maxMessageBytes: config.limits.maxBodyBytes, keys, limiter });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    ownership.close();
    keys.close();
    await Promise.allSettled([retention?.close(), responsesWs.close(), runner.close(), fileSearch.close(), codeInterpreter?.close(), upstream.close(), mcp.close(), stores.conversations.close(), rawStore.close(), simulator?.close()]);
    throw listenStartupError(err, config.host, config.port);
  }
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  log.info({ url, dataDir: config.dataDir, upstreams: entries.map((e) => `${e.name}=${simulator && e === entries[0] ? 'simulated' : e.url}`) }, 'switchyard listening');

  let closed: Promise<void> | undefined;
  const shutdown = async (): Promise<void> => {
    closing = true;
    const running = inflight.size;
    log.info({ running, background: runner.activeRuns, graceMs: config.shutdownGraceMs }, 'shutting down: no new requests; running turns may finish');
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const drained = await inflight.drained(config.shutdownGraceMs);
    // past the grace: every stream still open ends with response.failed (server_shutting_down), stored
    const cut = drained ? 0 : inflight.abortAll(new GatewayShutdown());
    const cutBackground = runner.activeRuns;
    // upgraded sockets are not HTTP connections: server.close() would wait for them forever
    await responsesWs.close();
    await runner.close();
    if (cut > 0) await inflight.drained(CUT_SETTLE_MS);
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), CUT_SETTLE_MS);
    await serverClosed;
    clearTimeout(force);
    log.info({ drained: running - cut, cut, cutBackground }, 'shutdown: running turns drained or cut');
    ownership.close();
    keys.close();
    await retention?.close();
    await fileSearch.close();
    await upstream.close();
    await mcp.close();
    await codeInterpreter?.close();
    // conversations first: on PostgreSQL it shares the responses' pool, which closes last
    await stores.conversations.close();
    await rawStore.close();
    if (options.store) await stores.responses.close();
    await simulator?.close();
    await tracing?.shutdown();
  };

  return {
    url,
    port,
    config,
    simulator,
    metrics,
    dispatch,
    close() {
      closed ??= shutdown();
      return closed;
    },
  };
}

/** The engine's observer: metrics and traces, whichever are on (undefined = none). */
function turnObserver(metrics: GatewayMetrics | undefined, tracing: Tracing | undefined): TurnObserver | undefined {
  if (!tracing) return metrics;
  return {
    round(upstreamSeconds, gatewaySeconds) {
      metrics?.round(upstreamSeconds, gatewaySeconds);
      tracing.round(upstreamSeconds, gatewaySeconds);
    },
    settled(response, rounds) {
      metrics?.settled(response, rounds);
    },
  };
}

/** Whether `host` is reachable only from this machine. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
