import { BraveProvider } from './brave.js';
import { McpSearchProvider, type McpSearchFn } from './mcp-provider.js';
import type { SearchProvider } from './provider.js';
import { SearxngProvider } from './searxng.js';
import { TavilyProvider } from './tavily.js';

export interface WebSearchConfig {
  provider: 'searxng' | 'brave' | 'tavily' | 'mcp' | null; // null = web_search not available
  /** Base URL override (SearXNG instance URL — required for searxng; optional for brave/tavily to point at a compatible endpoint, e.g. a local test server). */
  baseUrl?: string;
  apiKey?: string;
  /** For provider 'mcp': an operator-configured MCP server label and the tool to call with {query, count}. */
  mcpServer?: string;
  mcpTool?: string;
  /** Per provider request. */
  timeoutMs: number;
  /** Pages opened with open_page / find_in_page. */
  maxPageBytes: number;
  pageTimeoutMs: number;
  maxRedirects: number;
  cacheEntries: number;
  cacheTtlMs: number;
}

export const DEFAULT_WEB_SEARCH_CONFIG: WebSearchConfig = Object.freeze({
  provider: null,
  timeoutMs: 10_000,
  maxPageBytes: 2_000_000,
  pageTimeoutMs: 15_000,
  maxRedirects: 5,
  cacheEntries: 500,
  cacheTtlMs: 3_600_000,
});

const PROVIDERS = ['searxng', 'brave', 'tavily', 'mcp'] as const;

function invalid(field: string, why: string): Error {
  return new Error(`Invalid web search config: ${field} ${why}`);
}

function requireString(value: string | undefined, field: string, provider: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(field, `is required for provider '${provider}'`);
  return value.trim();
}

function checkBaseUrl(value: string, field = 'baseUrl'): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(field, `'${value.replace(/\/\/[^@/]*@/, '//***@')}' is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(field, `must be an http(s) URL, got '${url.protocol}'`);
  return value.trim();
}

function checkNumbers(config: WebSearchConfig): void {
  const positive: Array<keyof WebSearchConfig> = ['timeoutMs', 'maxPageBytes', 'pageTimeoutMs'];
  for (const field of positive) {
    const value = config[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw invalid(field, `must be a positive number, got ${String(value)}`);
  }
  const nonNegative: Array<keyof WebSearchConfig> = ['maxRedirects', 'cacheEntries', 'cacheTtlMs'];
  for (const field of nonNegative) {
    const value = config[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalid(field, `must be a number >= 0, got ${String(value)}`);
  }
}

/**
 * Builds the provider (uses undici for provider APIs — operator-configured, trusted URLs, not
 * guarded). For 'mcp', `deps.mcpSearch` performs the MCP call and returns the tool's text output
 * (see mcpSearchCallback). Returns undefined when provider is null. Throws an Error naming the
 * missing or invalid field when misconfigured.
 */
export function createSearchProvider(config: WebSearchConfig, deps: { mcpSearch?: McpSearchFn } = {}): SearchProvider | undefined {
  if (config.provider === null || config.provider === undefined) return undefined;
  if (!(PROVIDERS as readonly string[]).includes(config.provider)) {
    throw invalid('provider', `must be one of ${PROVIDERS.map((p) => `'${p}'`).join(', ')} or null, got '${String(config.provider)}'`);
  }
  checkNumbers(config);
  const baseUrl = config.baseUrl !== undefined && config.baseUrl.trim() !== '' ? checkBaseUrl(config.baseUrl) : undefined;
  switch (config.provider) {
    case 'searxng':
      return new SearxngProvider({
        baseUrl: checkBaseUrl(requireString(baseUrl, 'baseUrl', 'searxng')),
        timeoutMs: config.timeoutMs,
        ...(config.apiKey ? { apiKey: config.apiKey } : {}),
      });
    case 'brave':
      return new BraveProvider({ apiKey: requireString(config.apiKey, 'apiKey', 'brave'), timeoutMs: config.timeoutMs, ...(baseUrl ? { baseUrl } : {}) });
    case 'tavily':
      return new TavilyProvider({ apiKey: requireString(config.apiKey, 'apiKey', 'tavily'), timeoutMs: config.timeoutMs, ...(baseUrl ? { baseUrl } : {}) });
    case 'mcp': {
      requireString(config.mcpServer, 'mcpServer', 'mcp');
      requireString(config.mcpTool, 'mcpTool', 'mcp');
      if (!deps.mcpSearch) throw invalid('mcpServer', "needs an MCP search callback (deps.mcpSearch) for provider 'mcp'");
      return new McpSearchProvider(deps.mcpSearch, { timeoutMs: config.timeoutMs });
    }
  }
}
