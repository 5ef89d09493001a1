import { readFileSync } from 'node:fs';
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
  limits: { maxBodyBytes: number };
  tools: { maxToolRounds: number; maxConcurrentGatewayCalls: number; defaultTimeoutMs: number; timeoutsMs: Record<string, number> };
  /** Where state lives (default: SQLite in dataDir). */
  store: StoreConfig;
  mcp: McpConfig;
  webSearch: WebSearchSettings;
  /** Background runs: heartbeat period and when a silent owner's runs are failed. */
  background: { heartbeatMs: number; staleAfterMs: number };
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
  limits: { maxBodyBytes: 32 * 1024 * 1024 },
  tools: { maxToolRounds: 10, maxConcurrentGatewayCalls: 8, defaultTimeoutMs: 60_000, timeoutsMs: {} },
  store: { kind: 'sqlite' },
  mcp: DEFAULT_MCP_CONFIG,
  webSearch: DEFAULT_WEB_SEARCH_SETTINGS,
  background: { heartbeatMs: 2_000, staleAfterMs: 10_000 },
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
  SWITCHYARD_MAX_TOOL_ROUNDS: { path: ['tools', 'maxToolRounds'], type: 'number' },
  SWITCHYARD_MAX_CONCURRENT_GATEWAY_CALLS: { path: ['tools', 'maxConcurrentGatewayCalls'], type: 'number' },
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
