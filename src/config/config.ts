import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { DEFAULT_CODE_INTERPRETER_CONFIG, type CodeInterpreterConfig } from '../containers/config.js';
import { DEFAULT_MCP_CONFIG, type McpConfig } from '../mcp/service.js';
import { DEFAULT_WEB_SEARCH_SETTINGS, type WebSearchSettings } from '../search/setup.js';
import type { StoreConfig } from '../store/open-stores.js';
import { DEFAULT_FILE_SEARCH_SETTINGS, type FileSearchSettings } from '../retrieval/settings.js';
import type { UpstreamOptions } from '../upstream/client.js';

/** The upstream: where it is, which dialect, and the transport settings (see UpstreamOptions). */
export interface UpstreamConfig extends Omit<UpstreamOptions, 'baseUrl'> {
  /** Base URL including `/v1`; null = the built-in simulated model. */
  url: string | null;
  api: 'chat' | 'responses';
  /** Send earlier reasoning back to the model, under which field (interleaved thinking). */
  reasoningReplay: 'none' | 'reasoning' | 'reasoning_content';
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  logLevel: string;
  /** On shutdown, how long running requests may finish before their connections are cut. */
  shutdownGraceMs: number;
  upstream: UpstreamConfig;
  limits: {
    maxBodyBytes: number;
    /** Time to receive a request's headers; then the whole request (headers + body). The response is never timed. */
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    /** Open client connections at most (HTTP and WebSocket). */
    maxConnections: number;
    /**
     * `input_image` parts with an http(s) `image_url`: `inline` = the gateway fetches them through the
     * outbound guard (`outbound`) and sends the model a data URL; `forward` = the model server fetches
     * them itself (outside the guard); `reject` = a 400.
     */
    imageUrls: 'inline' | 'forward' | 'reject';
    /** Largest image fetched for `inline`. */
    maxImageBytes: number;
    /** Where `inline` may fetch from (same shape as `mcp.outbound`); public https only by default. */
    imageOutbound: { allowHosts: string[]; allowCidrs: string[]; allowHttp: boolean };
  };
  tools: {
    maxToolRounds: number;
    maxConcurrentGatewayCalls: number;
    defaultTimeoutMs: number;
    timeoutsMs: Record<string, number>;
    /** A custom tool input that fails its grammar: `retry` (one repair round), `pass` (log), `reject` (error result). */
    grammar: 'retry' | 'pass' | 'reject';
  };
  /** Where state lives (default: SQLite in dataDir). */
  store: StoreConfig;
  mcp: McpConfig;
  webSearch: WebSearchSettings;
  /** code_interpreter: the sandbox, its pool, containers (see src/containers/config.ts). */
  codeInterpreter: CodeInterpreterConfig;
  /**
   * Runs of this process (foreground and background) and conversation leases: heartbeat period,
   * when a silent owner's runs are failed (and its leases expire), and how many background runs
   * run at once here (the rest wait in the store's FIFO queue).
   */
  background: { heartbeatMs: number; staleAfterMs: number; maxConcurrent: number };
  /** The Files API: where uploaded bytes live (null = `<dataDir>/files`) and the upload cap. */
  files: { dir: string | null; maxUploadBytes: number };
  fileSearch: FileSearchSettings;
}

export const DEFAULT_CONFIG: Config = {
  host: '127.0.0.1',
  port: 8080,
  dataDir: './data',
  logLevel: 'info',
  shutdownGraceMs: 5_000,
  upstream: {
    url: null,
    api: 'chat',
    connectTimeoutMs: 5_000,
    firstTokenTimeoutMs: 300_000,
    idleTimeoutMs: 120_000,
    maxRetries: 2,
    retryBaseDelayMs: 100,
    connections: 0,
    reasoningReplay: 'none',
  },
  limits: {
    maxBodyBytes: 32 * 1024 * 1024,
    headersTimeoutMs: 20_000,
    requestTimeoutMs: 120_000,
    maxConnections: 4_096,
    imageUrls: 'inline',
    maxImageBytes: 20 * 1024 * 1024,
    imageOutbound: { allowHosts: [], allowCidrs: [], allowHttp: false },
  },
  tools: { maxToolRounds: 10, maxConcurrentGatewayCalls: 8, defaultTimeoutMs: 60_000, timeoutsMs: {}, grammar: 'retry' },
  store: { kind: 'sqlite' },
  mcp: DEFAULT_MCP_CONFIG,
  webSearch: DEFAULT_WEB_SEARCH_SETTINGS,
  codeInterpreter: DEFAULT_CODE_INTERPRETER_CONFIG,
  // a background run mostly waits on the upstream: several per core keep the machine busy, not swamped
  background: { heartbeatMs: 2_000, staleAfterMs: 10_000, maxConcurrent: Math.max(4, availableParallelism() * 8) },
  files: { dir: null, maxUploadBytes: 512 * 1024 * 1024 },
  fileSearch: DEFAULT_FILE_SEARCH_SETTINGS,
};

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** Environment variables that map onto config paths (documented in the README). */
const ENV: Record<string, { path: string[]; type: 'string' | 'number' }> = {
  SWITCHYARD_HOST: { path: ['host'], type: 'string' },
  SWITCHYARD_PORT: { path: ['port'], type: 'number' },
  SWITCHYARD_DATA_DIR: { path: ['dataDir'], type: 'string' },
  SWITCHYARD_LOG_LEVEL: { path: ['logLevel'], type: 'string' },
  SWITCHYARD_UPSTREAM_URL: { path: ['upstream', 'url'], type: 'string' },
  SWITCHYARD_DATABASE_URL: { path: ['store', 'url'], type: 'string' },
  SWITCHYARD_UPSTREAM_API: { path: ['upstream', 'api'], type: 'string' },
  SWITCHYARD_UPSTREAM_API_KEY: { path: ['upstream', 'apiKey'], type: 'string' },
  SWITCHYARD_WEB_SEARCH_PROVIDER: { path: ['webSearch', 'provider'], type: 'string' },
  SWITCHYARD_WEB_SEARCH_URL: { path: ['webSearch', 'baseUrl'], type: 'string' },
  SWITCHYARD_WEB_SEARCH_API_KEY: { path: ['webSearch', 'apiKey'], type: 'string' },
  SWITCHYARD_CODE_INTERPRETER_DIR: { path: ['codeInterpreter', 'dir'], type: 'string' },
  SWITCHYARD_CODE_INTERPRETER_PYTHON: { path: ['codeInterpreter', 'python'], type: 'string' },
  SWITCHYARD_MAX_TOOL_ROUNDS: { path: ['tools', 'maxToolRounds'], type: 'number' },
  SWITCHYARD_MAX_CONCURRENT_GATEWAY_CALLS: { path: ['tools', 'maxConcurrentGatewayCalls'], type: 'number' },
  SWITCHYARD_BACKGROUND_MAX_CONCURRENT: { path: ['background', 'maxConcurrent'], type: 'number' },
  SWITCHYARD_TOOLS_GRAMMAR: { path: ['tools', 'grammar'], type: 'string' },
  SWITCHYARD_FILES_DIR: { path: ['files', 'dir'], type: 'string' },
  SWITCHYARD_EMBEDDING_MODEL: { path: ['fileSearch', 'embeddingModel'], type: 'string' },
  SWITCHYARD_EMBEDDINGS_URL: { path: ['fileSearch', 'embeddingsUrl'], type: 'string' },
};

/** Defaults < config file < environment < command-line flags. */
export function loadConfig(options: { file?: string; env?: NodeJS.ProcessEnv; overrides?: DeepPartial<Config> } = {}): Config {
  let config: Config = structuredClone(DEFAULT_CONFIG);
  const env = options.env ?? process.env;
  const file = options.file ?? env.SWITCHYARD_CONFIG;
  if (file) config = merge(config, JSON.parse(readFileSync(file, 'utf8')) as DeepPartial<Config>);
  for (const [name, spec] of Object.entries(ENV)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = spec.type === 'number' ? Number(raw) : raw;
    if (spec.type === 'number' && !Number.isFinite(value)) throw new Error(`${name} must be a number, got '${raw}'`);
    setPath(config as unknown as Record<string, unknown>, spec.path, value);
  }
  if (options.overrides) config = merge(config, options.overrides);
  validate(config);
  return config;
}

function validate(config: Config): void {
  if (config.upstream.api !== 'chat' && config.upstream.api !== 'responses') throw new Error(`upstream.api must be 'chat' or 'responses', got '${config.upstream.api}'`);
  if (config.upstream.url !== null) new URL(config.upstream.url);
  if (!(config.tools.maxToolRounds >= 1)) throw new Error('tools.maxToolRounds must be at least 1');
  if (!(Number.isInteger(config.background.maxConcurrent) && config.background.maxConcurrent >= 1)) throw new Error('background.maxConcurrent must be an integer of at least 1');
  // a lease renewed every heartbeat must not expire between two of them
  if (!(config.background.heartbeatMs > 0 && config.background.staleAfterMs >= 2 * config.background.heartbeatMs)) {
    throw new Error('background.staleAfterMs must be at least twice background.heartbeatMs (and both positive)');
  }
  if (!['retry', 'pass', 'reject'].includes(config.tools.grammar)) throw new Error(`tools.grammar must be 'retry', 'pass' or 'reject', got '${String(config.tools.grammar)}'`);
  if (!['inline', 'forward', 'reject'].includes(config.limits.imageUrls)) throw new Error(`limits.imageUrls must be 'inline', 'forward' or 'reject', got '${String(config.limits.imageUrls)}'`);
  if (!(config.limits.headersTimeoutMs > 0 && config.limits.requestTimeoutMs >= config.limits.headersTimeoutMs)) {
    throw new Error('limits.headersTimeoutMs must be positive and limits.requestTimeoutMs at least as long');
  }
  // a database URL alone selects PostgreSQL
  if (config.store.url && config.store.kind === 'sqlite' && /^postgres(ql)?:/.test(config.store.url)) config.store.kind = 'postgres';
  if (!(config.files.maxUploadBytes >= 1)) throw new Error('files.maxUploadBytes must be at least 1');
  if (config.fileSearch.embeddingsUrl) new URL(config.fileSearch.embeddingsUrl);
  if (config.store.kind !== 'sqlite' && config.store.kind !== 'postgres') throw new Error(`store.kind must be 'sqlite' or 'postgres', got '${String(config.store.kind)}'`);
}

function merge<T>(base: T, patch: DeepPartial<T> | undefined): T {
  if (patch === undefined) return base;
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = value !== null && typeof value === 'object' && !Array.isArray(value) && current !== null && typeof current === 'object'
      ? merge(current, value as DeepPartial<typeof current>)
      : value;
  }
  return out as T;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1]] = value;
}
