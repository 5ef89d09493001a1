import type { ExecutionFactory } from '../handler.js';
import type { McpService } from '../../mcp/service.js';
import { outboundPolicy, type OutboundPolicy } from '../../net/outbound-guard.js';
import { TtlCache } from '../../search/cache.js';
import { createSearchProvider, DEFAULT_WEB_SEARCH_CONFIG, type WebSearchConfig } from '../../search/create-provider.js';
import { mcpSearchCallback } from '../../search/mcp-provider.js';
import { createPageReader, type Page } from '../../search/page-reader.js';
import type { SearchResult } from '../../search/provider.js';
import { webSearchExecutionFactory } from './execution.js';

/** `webSearch` in the config: the provider, page limits, and which addresses pages may be fetched from. */
export interface WebSearchSettings extends WebSearchConfig {
  /** Pages the model opens are client-directed URLs: the same guard as MCP, no private addresses. */
  outbound: Partial<OutboundPolicy>;
}

export const DEFAULT_WEB_SEARCH_SETTINGS: WebSearchSettings = { ...DEFAULT_WEB_SEARCH_CONFIG, outbound: { allowHosts: [], allowCidrs: [], allowHttp: true } };

/** The `web_search` execution side from the config; undefined when no provider is configured. */
export function setUpWebSearch(settings: WebSearchSettings, mcp: McpService, timeoutMs: number): ExecutionFactory | undefined {
  const mcpSearch =
    settings.provider === 'mcp' && settings.mcpServer && settings.mcpTool
      ? mcpSearchCallback(mcp, mcp.resolve({ server_label: settings.mcpServer }, 'webSearch.mcpServer'), settings.mcpTool, settings.timeoutMs)
      : undefined;
  const provider = createSearchProvider(settings, { mcpSearch });
  if (!provider) return undefined;
  const pages = createPageReader(outboundPolicy(settings.outbound), { maxBytes: settings.maxPageBytes, timeoutMs: settings.pageTimeoutMs, maxRedirects: settings.maxRedirects });
  return webSearchExecutionFactory({
    provider,
    pages,
    searchCache: new TtlCache<SearchResult[]>(settings.cacheEntries, settings.cacheTtlMs),
    // pages are large (up to 200,000 characters cached each): fewer of them than search results
    pageCache: new TtlCache<Page>(Math.min(settings.cacheEntries, 100), settings.cacheTtlMs),
    timeoutMs,
  });
}
