import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { DURATION_PATTERN } from '../util/duration.js';

/**
 * The configuration schema: the one source of truth for keys, types, defaults, the environment
 * variables and flags that set them, `--help`, the README's configuration table and
 * `switchyard config check` (which masks the keys marked `secret`).
 *
 * Adding a key = one line in the section it belongs to, e.g.
 *   maxConcurrent: z.number().int().min(1).default(4).meta(doc('Background runs at once')),
 * then `npm run docs:config` to refresh the README table (a test fails until it matches).
 * Give it `env: 'SWITCHYARD_…'` and/or `flag: '--…'` in its doc to make it settable there too.
 */

/** What a key means and where else it can be set; read by the doc and env walkers in describe.ts. */
export interface KeyDoc {
  [extra: string]: unknown;
  description: string;
  /** Environment variable that sets this key (strings, numbers and booleans are converted). */
  env?: string;
  /** Command-line flag of `switchyard serve` that sets this key. */
  flag?: string;
  /** Masked by `config check` and never logged. */
  secret?: boolean;
  /** How the default reads in the docs, when the value alone says too little. */
  defaultText?: string;
}

export function doc(description: string, more: Omit<KeyDoc, 'description'> = {}): KeyDoc {
  return { description, ...more };
}

const ms = (description: string, value: number, more: Omit<KeyDoc, 'description'> = {}) =>
  z.number().int().min(0, { error: 'expected a duration in ms (≥ 0)' }).default(value).meta(doc(description, more));
const count = (description: string, value: number, min = 0, more: Omit<KeyDoc, 'description'> = {}) =>
  z.number().int().min(min, { error: `expected a whole number ≥ ${min}` }).default(value).meta(doc(description, more));

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected a URL (http:// or https://)' });
const upstreamApi = z.enum(['chat', 'responses'], { error: "expected 'chat' or 'responses'" });
const reasoningReplay = z.enum(['none', 'reasoning', 'reasoning_content'], { error: "expected 'none', 'reasoning' or 'reasoning_content'" });

// ─── server ────────────────────────────────────────────────────────────────────────────────────
const server = {
  host: z.string().min(1).default('127.0.0.1').meta(doc('Address to listen on', { env: 'SWITCHYARD_HOST', flag: '--host' })),
  port: z.number().int().min(0).max(65535, { error: 'expected a port number (0–65535)' }).default(8080).meta(doc('Port to listen on (0 = any free port)', { env: 'SWITCHYARD_PORT', flag: '--port' })),
  dataDir: z.string().min(1).default('./data').meta(doc('Data folder (the SQLite file lives here)', { env: 'SWITCHYARD_DATA_DIR', flag: '--data-dir' })),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'expected one of fatal, error, warn, info, debug, trace, silent' }).default('info').meta(doc('Log level (`debug` logs every round and tool call)', { env: 'SWITCHYARD_LOG_LEVEL', flag: '--log-level' })),
  shutdownGraceMs: ms('On SIGTERM/SIGINT, how long running turns may finish before their streams are ended with `server_shutting_down`', 5_000, { env: 'SWITCHYARD_SHUTDOWN_GRACE_MS' }),
};

// ─── upstreams ─────────────────────────────────────────────────────────────────────────────────
/** Transport settings every upstream has; `upstream.*` holds the defaults, each `upstreams[]` entry may override them. */
const transport = {
  connectTimeoutMs: ms('Connect timeout', 5_000),
  firstTokenTimeoutMs: ms('From sending the request to the first event', 300_000),
  idleTimeoutMs: ms('Longest silence between two chunks of a started stream', 120_000),
  maxRetries: count('Retries of connection failures and 5xx before the first byte (then the next candidate upstream)', 2),
  retryBaseDelayMs: ms('Backoff base between retries', 100),
  connections: count('Most connections to the upstream at once (0 = one per open stream, no cap)', 0),
  reasoningReplay: reasoningReplay.default('none').meta(doc('Send earlier reasoning back to templates that re-read it')),
};

const upstream = z
  .strictObject({
    url: httpUrl.nullable().default(null).meta(doc('The one upstream\'s base URL including `/v1` (a one-entry `upstreams`)', { env: 'SWITCHYARD_UPSTREAM_URL', flag: '--upstream', defaultText: 'none → the built-in simulated model' })),
    api: upstreamApi.default('chat').meta(doc('Dialect: `chat` (`/chat/completions`) or `responses` (vLLM `/v1/responses`)', { env: 'SWITCHYARD_UPSTREAM_API', flag: '--upstream-api' })),
    apiKey: z.string().optional().meta(doc('Bearer key sent to the upstream', { env: 'SWITCHYARD_UPSTREAM_API_KEY', secret: true })),
    ...transport,
  })
  .prefault({})
  .meta(doc('The single upstream, and the transport defaults of every `upstreams[]` entry'));

const upstreamEntry = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, { error: 'expected a name of letters, digits, `_`, `.` or `-`' }),
  url: httpUrl,
  api: upstreamApi.optional(),
  apiKey: z.string().optional().meta(doc('Bearer key sent to this upstream', { secret: true })),
  models: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)], { error: 'expected "*" or a list of model names' }).default('*'),
  connectTimeoutMs: z.number().int().min(0).optional(),
  firstTokenTimeoutMs: z.number().int().min(0).optional(),
  idleTimeoutMs: z.number().int().min(0).optional(),
  maxRetries: z.number().int().min(0).optional(),
  retryBaseDelayMs: z.number().int().min(0).optional(),
  connections: z.number().int().min(0).optional(),
  reasoningReplay: reasoningReplay.optional(),
});

const upstreams = z
  .array(upstreamEntry)
  .default([])
  .meta(doc('Many upstreams: `[{name, url, api?, apiKey?, models: [...] | "*", …transport overrides}]`; a model several serve is tried in this order', { defaultText: '`[]`' }));

const target = z.strictObject({ upstream: z.string().min(1), model: z.string().min(1) });
const models = z
  .record(z.string().min(1), z.strictObject({ upstream: z.string().min(1), model: z.string().min(1), fallbacks: z.array(target).default([]) }))
  .default({})
  .meta(doc('Aliases: `{alias: {upstream, model, fallbacks: [{upstream, model}]}}`', { defaultText: '`{}`' }));

/** Which outbound addresses a client-directed fetch may reach (the SSRF guard's policy). */
const outbound = (allowHttp: boolean) =>
  z
    .strictObject({
      allowHosts: z.array(z.string()).default([]),
      allowCidrs: z.array(z.string()).default([]),
      allowHttp: z.boolean().default(allowHttp),
    })
    .prefault({});

// ─── auth ──────────────────────────────────────────────────────────────────────────────────────
const apiKey = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9_.@-]+$/, { error: 'expected a name of letters, digits, `_`, `.`, `@` or `-`' }),
    key: z.string().min(16, { error: 'expected a key of at least 16 characters' }).optional().meta(doc('The key clients send', { secret: true })),
    keyHash: z
      .string()
      .regex(/^(sha256:)?[0-9a-fA-F]{64}$/, { error: 'expected sha256:<64 hex digits>' })
      .optional(),
    tenant: z.string().min(1).max(200).optional(),
    rpm: z.number().int().min(1).optional(),
    maxConcurrent: z.number().int().min(1).optional(),
  })
  .refine((k) => (k.key === undefined) !== (k.keyHash === undefined), { error: 'expected exactly one of key or keyHash' });

const auth = z
  .strictObject({
    keys: z
      .array(apiKey)
      .default([])
      .meta(doc('API keys: `[{name, key | keyHash, tenant?, rpm?, maxConcurrent?}]` (tenant defaults to the name); `switchyard keys create` adds keys to the store', { defaultText: '`[]` (auth off unless the store has keys)' })),
    insecureNoAuth: z.boolean().default(false).meta(doc('Serve a non-loopback address with no keys at all', { flag: '--insecure-no-auth', env: 'SWITCHYARD_INSECURE_NO_AUTH' })),
    refreshMs: count("How often the store's keys are reloaded (created and revoked keys take effect)", 5_000, 100),
  })
  .prefault({});

// ─── limits, tools ─────────────────────────────────────────────────────────────────────────────
const limits = z
  .strictObject({
    maxBodyBytes: count('Largest request body', 32 * 1024 * 1024, 1, { defaultText: '32 MiB' }),
    headersTimeoutMs: count("Time to receive a request's headers (then `408`); responses are never timed", 20_000, 1),
    requestTimeoutMs: count('Time to receive a whole request, headers and body (at least `headersTimeoutMs`)', 120_000, 1),
    maxConnections: count('Open client connections at most (HTTP and WebSocket)', 4_096, 1),
    imageUrls: z
      .enum(['inline', 'forward', 'reject'], { error: "expected 'inline', 'forward' or 'reject'" })
      .default('inline')
      .meta(doc('`input_image` URLs: `inline` (fetched by the gateway through the outbound guard, sent as a data URL), `forward` (the model server fetches them), `reject` (`400`)')),
    maxImageBytes: count('Largest image fetched for `inline`', 20 * 1024 * 1024, 1, { defaultText: '20 MiB' }),
    imageOutbound: outbound(false).meta(doc('Where `inline` may fetch images from: `{allowHosts, allowCidrs, allowHttp}`', { defaultText: 'public https only' })),
    maxConcurrentTurns: count('Turns (responses, messages, chat completions, compactions) running at once; more get `429` (0 = no limit)', 0, 0, { env: 'SWITCHYARD_MAX_CONCURRENT_TURNS' }),
    maxOpenStreams: count('Event streams (SSE) open at once; more get `429` (0 = no limit)', 0, 0, { env: 'SWITCHYARD_MAX_OPEN_STREAMS' }),
  })
  .prefault({});

const deferralMode = z.enum(['result', 'declare', 'eager'], { error: "expected 'result', 'declare' or 'eager'" });

/** Hosted `tool_search` (execution `server`): how loaded tools reach the model, and what one search may load. */
function toolSearch() {
  return z
    .strictObject({
      mode: deferralMode
        .default('result')
        .meta(doc('How loaded tools reach the model: `result` (schemas in the search result, upstream `tools` unchanged: prompt-cache friendly), `declare` (appended to `tools`), `eager` (nothing deferred: for models that never search)')),
      modelModes: z.record(z.string().min(1), deferralMode).default({}).meta(doc('`mode` per model name, e.g. `{"qwen3-coder": "eager"}`', { defaultText: '`{}`' })),
      defaultLimit: count('Tools a `query` search loads unless the model sets `limit`', 8, 1),
      maxLimit: count('Largest `limit` a search may ask for', 20, 1),
      maxToolsPerSearch: count('Tools one search loads at most (`paths` included)', 20, 1),
      maxSchemaBytesPerSearch: count('Schema bytes one search loads at most', 65_536, 1, { defaultText: '64 KiB' }),
      maxLoadedTools: count('Deferred tools loaded per conversation at most', 64, 1),
      maxSearchesPerResponse: count('Searches per response; later ones are answered with an error', 8, 1),
    })
    .prefault({});
}

const tools = z
  .strictObject({
    maxToolRounds: count('Inference rounds per response before `incomplete`', 10, 1, { env: 'SWITCHYARD_MAX_TOOL_ROUNDS' }),
    maxConcurrentGatewayCalls: count('Gateway-owned tool calls running at once per response', 8, 1, { env: 'SWITCHYARD_MAX_CONCURRENT_GATEWAY_CALLS' }),
    defaultTimeoutMs: ms('Per-call timeout of gateway-owned tools', 60_000),
    timeoutsMs: z.record(z.string(), z.number().int().min(0)).default({}).meta(doc('Per tool type, e.g. `{"web_search": 20000, "mcp": 30000}`', { defaultText: '`{}`' })),
    grammar: z
      .enum(['retry', 'pass', 'reject'], { error: "expected 'retry', 'pass' or 'reject'" })
      .default('retry')
      .meta(doc('A custom tool input that fails its grammar: `retry` (one repair round), `pass` (log, return), `reject` (error result for the model)', { env: 'SWITCHYARD_TOOLS_GRAMMAR' })),
    toolSearch: toolSearch(),
    unstoredResultsTtlMs: ms(
      'How long what the model saw of gateway-run calls (web search, MCP, …) of turns not stored (`store: false`) stays in memory (never on disk), so a history the client resends shows it to the model again (0 = not kept: the model is told the result is gone)',
      3_600_000,
    ),
    unstoredResultsMaxBytes: count('Memory for those results at most (the oldest go first)', 64 * 1024 * 1024, 0, { defaultText: '64 MiB' }),
  })
  .prefault({});

// ─── store ─────────────────────────────────────────────────────────────────────────────────────
const store = z
  .strictObject({
    kind: z.enum(['sqlite', 'postgres'], { error: "expected 'sqlite' or 'postgres'" }).default('sqlite').meta(doc('`sqlite` (in dataDir) or `postgres` (replicas); a `postgres://` url selects postgres')),
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\/\S+$/, { error: 'expected a postgres:// or postgresql:// URL' })
      .optional()
      .meta(doc('PostgreSQL connection string', { env: 'SWITCHYARD_DATABASE_URL', secret: true })),
    schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an SQL identifier' }).optional().meta(doc('PostgreSQL schema')),
    maxConnections: z.number().int().min(1).optional().meta(doc('PostgreSQL pool size')),
    retention: z
      .string()
      .regex(DURATION_PATTERN, { error: 'expected a duration such as 30d, 12h or 90m' })
      .nullable()
      .default(null)
      .meta(doc('Prune responses (with their event logs) and conversation items older than this, e.g. `30d`', { env: 'SWITCHYARD_RETENTION', defaultText: 'keep forever' })),
    retentionSweepMs: count('How often the retention sweeper runs', 60_000, 1),
    retentionBatch: count('Rows the retention sweeper deletes per transaction', 500, 1),
    chainCacheMb: count('Memory per process for settled `previous_response_id` chains kept decoded (MB), so a continued turn does not re-read its history; 0 turns it off', 64, 0),
  })
  .prefault({});

// ─── mcp ───────────────────────────────────────────────────────────────────────────────────────
const mcpServer = z.strictObject({
  url: httpUrl.optional(),
  headers: z.record(z.string(), z.string()).optional().meta(doc('Headers sent to the server', { secret: true })),
  transport: z.enum(['auto', 'streamable-http', 'sse']).optional(),
  command: z.string().optional(),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional().meta(doc('Environment of a stdio server', { secret: true })),
  cwd: z.string().optional(),
  allowedTools: z.array(z.string()).optional(),
  parallelSafe: z.boolean().optional(),
});

const mcp = z
  .strictObject({
    servers: z.record(z.string(), mcpServer).default({}).meta(doc('Operator servers by label: `url` + `headers`, or `command` + `args` (stdio)', { defaultText: '`{}`' })),
    outbound: outbound(false).meta(doc('Which request-declared server URLs may be reached: `{allowHosts, allowCidrs, allowHttp}`', { defaultText: 'public https only' })),
    listTimeoutMs: ms('`tools/list` timeout', 15_000),
    callTimeoutMs: ms('`tools/call` timeout (unless `tools.timeoutsMs.mcp`)', 60_000),
    idleSessionMs: ms('Idle MCP sessions are closed after', 300_000),
    maxServersPerRequest: count('MCP declarations per request', 20, 1),
    maxToolsPerServer: count('Tools listed per server', 500, 1),
    maxOutputBytes: count('Largest tool output passed to the model', 100_000, 1),
    breaker: z
      .strictObject({ failures: z.number().int().min(1).default(5), cooldownMs: z.number().int().min(0).default(30_000) })
      .prefault({})
      .meta(doc('Circuit breaker per server: `{failures, cooldownMs}`', { defaultText: '`{failures: 5, cooldownMs: 30000}`' })),
  })
  .prefault({});

// ─── web search ────────────────────────────────────────────────────────────────────────────────
const webSearch = z
  .strictObject({
    provider: z.enum(['searxng', 'brave', 'tavily', 'mcp'], { error: 'expected searxng, brave, tavily or mcp' }).nullable().default(null).meta(doc('Search provider (none: `web_search` is omitted)', { env: 'SWITCHYARD_WEB_SEARCH_PROVIDER', defaultText: 'none' })),
    baseUrl: httpUrl.optional().meta(doc('Provider URL (required for searxng)', { env: 'SWITCHYARD_WEB_SEARCH_URL' })),
    apiKey: z.string().optional().meta(doc('Provider API key', { env: 'SWITCHYARD_WEB_SEARCH_API_KEY', secret: true })),
    mcpServer: z.string().optional().meta(doc('provider `mcp`: operator MCP server label')),
    mcpTool: z.string().optional().meta(doc('provider `mcp`: tool called with `{query, count}`')),
    timeoutMs: ms('Per provider request', 10_000),
    maxPageBytes: count('Largest page opened', 2_000_000, 1),
    pageTimeoutMs: ms('Page fetch timeout', 15_000),
    maxRedirects: count('Redirects followed per page', 5),
    cacheEntries: count('Search result cache size', 500),
    cacheTtlMs: ms('Search result cache lifetime', 3_600_000),
    outbound: outbound(true).meta(doc('Which page URLs may be fetched: `{allowHosts, allowCidrs, allowHttp}`', { defaultText: 'public addresses only' })),
  })
  .prefault({});

// ─── background runs ───────────────────────────────────────────────────────────────────────────
const background = z
  .strictObject({
    heartbeatMs: count('How often a gateway marks its runs and conversation leases alive', 2_000, 1),
    staleAfterMs: count("A silent owner's runs are failed and its leases expire after this (at least twice the heartbeat)", 10_000, 1),
    // a background run mostly waits on the upstream: several per core keep the machine busy, not swamped
    maxConcurrent: count('Background runs running at once per gateway (the rest wait in the store\'s FIFO queue)', Math.max(4, availableParallelism() * 8), 1, {
      env: 'SWITCHYARD_BACKGROUND_MAX_CONCURRENT',
      defaultText: '8 × CPU cores, at least 4',
    }),
  })
  .prefault({});

// ─── files, file search ────────────────────────────────────────────────────────────────────────
const files = z
  .strictObject({
    dir: z.string().min(1).nullable().default(null).meta(doc('Where uploaded bytes live (replicas need a shared folder)', { env: 'SWITCHYARD_FILES_DIR', defaultText: '`<dataDir>/files`' })),
    maxUploadBytes: count('Largest upload', 512 * 1024 * 1024, 1, { defaultText: '512 MiB' }),
  })
  .prefault({});

const fileSearch = z
  .strictObject({
    embeddingModel: z.string().min(1).nullable().default('text-embedding-3-small').meta(doc('Embedding model for `/v1/embeddings` (null = keyword-only search)', { env: 'SWITCHYARD_EMBEDDING_MODEL' })),
    embeddingsUrl: httpUrl.nullable().default(null).meta(doc('A dedicated embeddings server (base URL with `/v1`)', { env: 'SWITCHYARD_EMBEDDINGS_URL', defaultText: 'none: routed by model like any request' })),
    embeddingsApiKey: z.string().nullable().default(null).meta(doc('Embeddings server key', { secret: true, defaultText: "the upstream's" })),
    embeddingBatchSize: count('Texts per embeddings request', 64, 1),
    embeddingMaxTokens: count("The embedder's context limit in tokens", 8191, 1),
    ingestionConcurrency: count('Files ingested at once per gateway', 2, 1),
    workerThreads: count('Worker threads for extraction and chunking', 1, 1),
    pollAfterMs: count('`openai-poll-after-ms` on in-progress objects', 200, 1),
    claimLeaseMs: count("An ingestion claim's lease (a dead replica's files are taken over after it)", 30_000, 1),
    rewriteModel: z.string().min(1).nullable().default(null).meta(doc('Model that rewrites queries of a search with `rewrite_query: true` (routed like any model)', { defaultText: 'none: a keyword rewrite' })),
    vectorIndex: z
      .enum(['auto', 'sqlite-vec', 'pgvector', 'exact'])
      .default('auto')
      .meta(doc("Vector search: `auto` = the store's index when it loads (sqlite-vec on SQLite, pgvector HNSW on PostgreSQL), else the exact scan, logged; `sqlite-vec` / `pgvector` = required (start-up fails without it); `exact` = never an index", { env: 'SWITCHYARD_FILE_SEARCH_VECTOR_INDEX' })),
    expirySweepMs: count('Time between sweeps that delete expired files and vector stores', 60_000, 10),
    expiryBatchSize: count('Expired objects deleted per batch (a sweep runs at most 10 batches)', 100, 1),
  })
  .prefault({});

// ─── code interpreter ──────────────────────────────────────────────────────────────────────────
const sandboxLimits = z
  .strictObject({
    memoryBytes: count('Address-space cap of every process in a box', 1024 * 1024 * 1024, 1, { defaultText: '1 GiB' }),
    maxProcesses: count('Processes and threads per box (a fork bomb stops here)', 64, 1),
    maxFileBytes: count('Largest file a box may write', 256 * 1024 * 1024, 1, { defaultText: '256 MiB' }),
    cpuSeconds: count("CPU seconds over a box's life", 3600, 1),
    maxOpenFiles: count('Open descriptors per process', 256, 16),
    tmpBytes: count("Size of a box's private `/tmp`", 64 * 1024 * 1024, 1, { defaultText: '64 MiB' }),
    workdirBytes: count("Size of a box's working folder", 512 * 1024 * 1024, 1, { defaultText: '512 MiB' }),
    maxLogBytes: count('Logs returned per run', 1024 * 1024, 1, { defaultText: '1 MiB' }),
    maxLineChars: count('Longest log line kept', 16_384, 1),
    maxImages: count('Figures returned per run', 8, 0),
    maxImageBytes: count('Largest figure PNG', 4 * 1024 * 1024, 1, { defaultText: '4 MiB' }),
  })
  .prefault({});

const codeInterpreter = z
  .strictObject({
    enabled: z.boolean().default(true).meta(doc('Offer `code_interpreter` (a preflight still refuses it, with a `400`, where the sandbox cannot run)')),
    bwrap: z.string().min(1).default('bwrap').meta(doc('The bubblewrap binary')),
    python: z.string().min(1).default('/usr/bin/python3').meta(doc('The system Python with numpy, pandas and matplotlib', { env: 'SWITCHYARD_CODE_INTERPRETER_PYTHON' })),
    dir: z.string().min(1).nullable().default(null).meta(doc("Containers' working folders", { env: 'SWITCHYARD_CODE_INTERPRETER_DIR', defaultText: '`<dataDir>/containers`' })),
    poolSize: count('Pre-started boxes kept ready', 2, 0),
    warmAtStartup: z.boolean().default(false).meta(doc('Fill the pool at start-up (else after the first call)')),
    maxBoxes: count('Live boxes at most', 16, 1),
    uidBase: count('Host uid of box 0 when the gateway runs as root (box n runs as uidBase + n)', 200_000, 1000),
    startTimeoutMs: count('Starting a box', 60_000, 1),
    runTimeoutMs: count('Soft timeout of one run (Python state kept; the box is killed 2 s later)', 30_000, 1),
    expiresAfterMinutes: count('Idle minutes before a container expires (default)', 20, 1),
    maxMemoryBytes: count('Largest `memory_limit` honoured', 16 * 1024 * 1024 * 1024, 512 * 1024 * 1024, { defaultText: '16 GiB' }),
    maxUploadBytes: count('Largest file uploaded into a container', 64 * 1024 * 1024, 1, { defaultText: '64 MiB' }),
    limits: sandboxLimits.meta(doc('Per-box limits: `memoryBytes`, `maxProcesses`, `maxFileBytes`, `cpuSeconds`, `maxOpenFiles`, `tmpBytes`, `workdirBytes`, `maxLogBytes`, `maxLineChars`, `maxImages`, `maxImageBytes`', { defaultText: 'see `src/sandbox/limits.ts`' })),
  })
  .prefault({});

// ─── observability ─────────────────────────────────────────────────────────────────────────────
const metrics = z
  .strictObject({
    enabled: z.boolean().default(true).meta(doc('Serve Prometheus metrics at `GET /metrics`', { env: 'SWITCHYARD_METRICS' })),
  })
  .prefault({});

// ─── coding-agent clients (switchyard codex / claude, GET /v1/models?client=codex) ──────────────
const inputModalities = z.array(z.enum(['text', 'image'], { error: "expected 'text' or 'image'" })).min(1);
const clientModel = z.strictObject({
  inputModalities: inputModalities.optional(),
  contextWindow: z.number().int().min(1).optional(),
  reasoning: z.boolean().optional(),
});
const clients = z
  .strictObject({
    inputModalities: inputModalities.default(['text']).meta(doc('What served models accept, told to coding agents (Codex sends images only to models listing `image`)', { defaultText: '`["text"]`' })),
    models: z.record(z.string(), clientModel).default({}).meta(doc('Per served model: `{inputModalities, contextWindow (else the upstream\'s `max_model_len`), reasoning (default true)}`', { defaultText: '`{}`' })),
  })
  .prefault({});

const tracing = z
  .strictObject({
    otlpEndpoint: httpUrl.optional().meta(doc('OTLP/HTTP traces endpoint (e.g. `http://collector:4318/v1/traces`); none = no tracing', { env: 'SWITCHYARD_OTLP_ENDPOINT' })),
    serviceName: z.string().min(1).default('switchyard').meta(doc('Service name on the traces')),
  })
  .prefault({});

export const configSchema = z.strictObject({
  ...server,
  auth,
  upstream,
  upstreams,
  models,
  limits,
  tools,
  store,
  mcp,
  webSearch,
  background,
  files,
  fileSearch,
  codeInterpreter,
  metrics,
  tracing,
  clients,
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
