import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { Config } from './config/config.js';
import { BackgroundRunner } from './engine/background.js';
import { RunOwnership } from './engine/run-ownership.js';
import { Engine } from './engine/turn.js';
import { createHttpServer } from './http/server.js';
import { attachResponsesWebSocket } from './http/websocket.js';
import type { JsonObject } from './protocol/responses.js';
import { McpService } from './mcp/service.js';
import { createImageUrlHandler } from './net/image-inline.js';
import { setUpWebSearch } from './search/setup.js';
import { setUpCodeInterpreter } from './containers/setup.js';
import { containerRoutes } from './http/containers-routes.js';
import { setUpFileSearch } from './retrieval/setup.js';
import { startSimulator, type Simulator } from './simulate/server.js';
import { openStores } from './store/open-stores.js';
import { conversationRoutes } from './http/conversations-routes.js';
import { compactRoutes } from './http/compact-routes.js';
import { messagesRoutes } from './http/messages-routes.js';
import { filesRoutes } from './http/files-routes.js';
import { vectorStoresRoutes } from './http/vector-stores-routes.js';
import type { ResponseStore } from './store/store.js';
import type { DeclareContext, RequestContext } from './tools/handler.js';
import type { GatewayExecution } from './tools/types.js';
import { ChatCompletionsUpstream } from './upstream/chat-completions.js';
import type { UpstreamClient } from './upstream/client.js';
import { ResponsesUpstream } from './upstream/responses.js';

/** Builds the execution side of a gateway tool type for one declaration (undefined = not configured). */
export type ExecutionFactory = (declaration: JsonObject, request: RequestContext) => GatewayExecution | undefined;

export interface GatewayOptions {
  config: Config;
  logger?: pino.Logger;
  /** Execution sides of gateway-owned tool types, by canonical type (`web_search`, `mcp`, …). */
  executions?: Record<string, ExecutionFactory>;
  /** Replaces the configured store (tests, embedding). */
  store?: ResponseStore;
}

export interface Gateway {
  url: string;
  port: number;
  config: Config;
  /** The built-in simulated model, when no upstream is configured. */
  simulator: Simulator | undefined;
  close(): Promise<void>;
}

/** The composition root: config → store, upstream, engine, HTTP server. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const log = options.logger ?? pino({ level: config.logLevel });
  let simulator: Simulator | undefined;
  let upstreamUrl = config.upstream.url;
  if (upstreamUrl === null) {
    simulator = await startSimulator({ port: 0 });
    upstreamUrl = simulator.url;
    log.info({ upstream: upstreamUrl }, 'no upstream configured: using the built-in simulated model (set --upstream to use a real one)');
  }
  const upstreamOptions = { ...config.upstream, baseUrl: upstreamUrl };
  const upstream: UpstreamClient = config.upstream.api === 'responses' ? new ResponsesUpstream(upstreamOptions) : new ChatCompletionsUpstream(upstreamOptions, config.upstream.reasoningReplay);
  const stores = await openStores(config.store, config.dataDir, (err) => log.warn({ err }, 'store: idle connection error'));
  const store = options.store ?? stores.responses;
  const conversations = stores.conversations;

  const executions: Record<string, ExecutionFactory> = { ...options.executions };
  const mcp = new McpService({ ...config.mcp, callTimeoutMs: config.tools.timeoutsMs.mcp ?? config.mcp.callTimeoutMs });
  const webSearch = setUpWebSearch(config.webSearch, mcp, config.tools.timeoutsMs.web_search ?? Math.max(config.webSearch.timeoutMs, config.webSearch.pageTimeoutMs) + 5_000);
  if (webSearch && !executions.web_search) executions.web_search = webSearch;
  const fileSearch = await setUpFileSearch(config, upstreamUrl, log);
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
      return timeoutMs === execution.timeoutMs ? execution : { ...execution, timeoutMs, begin: execution.begin.bind(execution), run: execution.run.bind(execution), end: execution.end.bind(execution) };
    },
    logOnce: (key, message) => {
      // keys can come from clients (unknown tool types): bounded so they cannot grow it forever
      if (logged.has(key) || logged.size >= 1_000) return;
      logged.add(key);
      log.warn({ tool: key }, message);
    },
    mcp,
    grammar: { policy: config.tools.grammar, log: (message, fields) => log.warn(fields, message) },
  };
  // this process's runs and conversation leases, heart-beaten: a dead process holds nothing for long
  const ownership = new RunOwnership(store, conversations, log, config.background);
  const images = createImageUrlHandler({ mode: config.limits.imageUrls, maxBytes: config.limits.maxImageBytes, outbound: config.limits.imageOutbound });
  const engine = new Engine(upstream, store, declare, { maxToolRounds: config.tools.maxToolRounds, maxConcurrentGatewayCalls: config.tools.maxConcurrentGatewayCalls, maxMcpServersPerRequest: config.mcp.maxServersPerRequest, conversations, ownership, images }, log);
  const background = new BackgroundRunner(engine, store, log, config.background);
  background.start();
  await ownership.start();
  // the upstream's model list, as it lists them (the simulator's, in the quick start)
  const listModels = () => upstream.listModels(AbortSignal.timeout(config.upstream.connectTimeoutMs + 5_000));
  const server = createHttpServer({
    engine,
    store,
    background,
    maxBodyBytes: config.limits.maxBodyBytes,
    connectionLimits: config.limits,
    log,
    health: () => ({ status: 'ok', upstream: simulator ? 'simulated' : upstreamUrl, upstream_api: config.upstream.api }),
    routes: [
      ...filesRoutes({ store: fileSearch.store, blobs: fileSearch.blobs, maxUploadBytes: config.files.maxUploadBytes }),
      ...vectorStoresRoutes({ store: fileSearch.store, retriever: fileSearch.retriever, notifyIngestion: () => fileSearch.ingestion.notify(), maxBodyBytes: config.limits.maxBodyBytes, pollAfterMs: config.fileSearch.pollAfterMs }),
      ...conversationRoutes(conversations, config.limits.maxBodyBytes),
      ...(codeInterpreter ? containerRoutes(codeInterpreter.service, { maxBodyBytes: config.limits.maxBodyBytes, maxUploadBytes: config.codeInterpreter.maxUploadBytes }) : []),
      ...compactRoutes({ engine, upstream, upstreamBaseUrl: upstreamUrl, maxBodyBytes: config.limits.maxBodyBytes, store, upstreamApiKey: config.upstream.apiKey, reasoningReplay: config.upstream.reasoningReplay }),
      // the Anthropic Messages surface over the same engine (and GET /v1/models in its shape when asked)
      ...messagesRoutes({ engine, log, maxBodyBytes: config.limits.maxBodyBytes, listModels, upstreamBaseUrl: upstreamUrl, upstreamApiKey: config.upstream.apiKey, reasoningReplay: config.upstream.reasoningReplay }),
    ],
    listModels,
  });
  const responsesWs = attachResponsesWebSocket(server, { engine, store, log, maxMessageBytes: config.limits.maxBodyBytes });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  log.info({ url, dataDir: config.dataDir, upstream: simulator ? 'simulated' : upstreamUrl }, 'switchyard listening');

  return {
    url,
    port,
    config,
    simulator,
    async close() {
      // stop accepting, drop idle keep-alive sockets, give running turns a moment, then cut the rest
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // upgraded sockets are not HTTP connections: server.close() would wait for them forever
      await responsesWs.close();
      const grace = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
      await closed;
      clearTimeout(grace);
      ownership.close();
      await background.close();
      await fileSearch.close();
      await upstream.close();
      await mcp.close();
      await codeInterpreter?.close();
      // conversations first: on PostgreSQL it shares the responses' pool, which closes last
      await conversations.close();
      await store.close();
      if (options.store) await stores.responses.close();
      await simulator?.close();
    },
  };
}
