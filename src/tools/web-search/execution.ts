import type { ExecutionFactory } from '../handler.js';
import { ID_PREFIX, type JsonObject } from '../../protocol/responses.js';
import { WEB_SEARCH_FUNCTIONS } from './handler.js';
import { failed, toolError, toolResult, type GatewayExecution, type GatewayInvocation, type ToolOutcome } from '../types.js';
import type { TtlCache } from '../../search/cache.js';
import { PageReadError, findInText, type Page } from '../../search/page-reader.js';
import { SearchProviderError, domainAllowed, type SearchProvider, type SearchResult, type UserLocation } from '../../search/provider.js';

export interface WebSearchServices {
  provider: SearchProvider;
  pages: { read(url: string, signal: AbortSignal): Promise<Page> };
  searchCache: TtlCache<SearchResult[]>;
  pageCache: TtlCache<Page>;
  timeoutMs: number;
}

/** Page text kept in the cache (find_in_page searches at most this much of a cached page). */
const MAX_CACHED_PAGE_CHARS = 200_000;

/** `search_context_size` → how much the model is shown. */
const CONTEXT = {
  low: { results: 3, snippetChars: 300, pageChars: 4_000 },
  medium: { results: 5, snippetChars: 600, pageChars: 12_000 },
  high: { results: 10, snippetChars: 1_000, pageChars: 30_000 },
} as const;

interface Options {
  allowedDomains: string[] | undefined;
  /** Never shown or opened (the Messages web search tool's `blocked_domains`). */
  blockedDomains: string[] | undefined;
  context: (typeof CONTEXT)[keyof typeof CONTEXT];
  userLocation: UserLocation | undefined;
  /** false: answer only from what the gateway cached from earlier searches and pages. */
  externalAccess: boolean;
  includeSources: boolean;
  /** `include: ["web_search_call.results"]`: the search's results (URL, title, date) on the call item. */
  includeResults: boolean;
}

interface CallState {
  index: number;
  id: string;
}

/**
 * `web_search` run by the gateway: searches through the operator's provider, opens pages and
 * finds text in them through the outbound guard, numbers every source for citation, and projects
 * each call as a `web_search_call` item with its events (in_progress → searching → completed).
 * Provider failures and rate limits are an error result for the model, never a failed response.
 */
export function webSearchExecutionFactory(services: WebSearchServices): ExecutionFactory {
  return (declaration, request) => webSearchExecution(services, optionsOf(declaration, request.include));
}

/** A declaration's domain list, normalized to bare hosts; undefined when absent or empty. */
function domainList(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return (value as string[]).map((d) => d.toLowerCase().replace(/^https?:\/\//, '').replace(/\/.*$/, ''));
}

/** Whether this search may show or open `url`: within the allowed domains, none of the blocked. */
function permitted(url: string, options: Options): boolean {
  return domainAllowed(url, options.allowedDomains) && !(options.blockedDomains && domainAllowed(url, options.blockedDomains));
}

function optionsOf(decl: JsonObject, include: readonly string[]): Options {
  const filters = decl.filters as JsonObject | undefined;
  const domains = domainList(filters?.allowed_domains);
  const size = (decl.search_context_size as keyof typeof CONTEXT | undefined) ?? 'medium';
  const location = decl.user_location as JsonObject | undefined;
  const text = (key: string) => (location && typeof location[key] === 'string' ? { [key]: location[key] as string } : {});
  return {
    allowedDomains: domains,
    blockedDomains: domainList(filters?.blocked_domains),
    context: CONTEXT[size] ?? CONTEXT.medium,
    userLocation: location ? { ...text('country'), ...text('city'), ...text('region'), ...text('timezone') } : undefined,
    externalAccess: decl.external_web_access !== false,
    includeSources: include.includes('web_search_call.action.sources'),
    includeResults: include.includes('web_search_call.results'),
  };
}

function webSearchExecution(services: WebSearchServices, options: Options): GatewayExecution {
  return {
    parallelSafe: true,
    timeoutMs: services.timeoutMs,
    begin(inv, emit): CallState {
      const id = emit.newId(ID_PREFIX.webSearch);
      const index = emit.add({ type: 'web_search_call', id, status: 'in_progress', action: actionOf(inv.entry.identity.name, inv.args) });
      emit.event('response.web_search_call.in_progress', index);
      emit.event('response.web_search_call.searching', index);
      return { index, id };
    },
    async run(inv) {
      switch (inv.entry.identity.name) {
        case WEB_SEARCH_FUNCTIONS.search:
          return search(services, options, inv);
        case WEB_SEARCH_FUNCTIONS.openPage:
          return openPage(services, options, inv);
        case WEB_SEARCH_FUNCTIONS.findInPage:
          return findInPage(services, options, inv);
        default:
          return failure(`unknown web_search function '${inv.entry.identity.name}'`);
      }
    },
    end(inv, outcome, emit, state) {
      const { index, id } = state as CallState;
      const action = actionOf(inv.entry.identity.name, inv.args);
      const sources = (outcome.detail as { sources?: string[] } | undefined)?.sources;
      if (action.type === 'search' && options.includeSources && sources) action.sources = sources.map((url) => ({ type: 'url', url }));
      const results = (outcome.detail as { results?: JsonObject[] } | undefined)?.results;
      if (!failed(outcome)) emit.event('response.web_search_call.completed', index);
      emit.done(index, { type: 'web_search_call', id, status: failed(outcome) ? 'failed' : 'completed', action, ...(options.includeResults && results ? { results } : {}) });
    },
  };
}

/** The public `action` of a call (SDK shapes: search · open_page · find_in_page). */
function actionOf(name: string, args: JsonObject): JsonObject {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  if (name === WEB_SEARCH_FUNCTIONS.openPage) return { type: 'open_page', url: str(args.url) };
  if (name === WEB_SEARCH_FUNCTIONS.findInPage) return { type: 'find_in_page', url: str(args.url), pattern: str(args.pattern) };
  return { type: 'search', query: str(args.query), queries: [str(args.query)] };
}

async function search(services: WebSearchServices, options: Options, inv: GatewayInvocation): Promise<ToolOutcome> {
  const query = typeof inv.args.query === 'string' ? inv.args.query.trim() : '';
  if (!query) return failure("web_search needs a non-empty 'query' string");
  const key = JSON.stringify([query.toLowerCase(), options.context.results, options.allowedDomains ?? null, options.blockedDomains ?? null, options.userLocation ?? null]);
  let results = services.searchCache.get(key);
  if (!results) {
    if (!options.externalAccess) return failure(`no cached results for "${query}" and live web access is disabled for this request`);
    try {
      const found = await services.provider.search({
        query,
        count: options.context.results,
        ...(options.allowedDomains ? { allowedDomains: options.allowedDomains } : {}),
        ...(options.userLocation ? { userLocation: options.userLocation } : {}),
        signal: inv.signal,
      });
      // providers filter natively where they can; the allow-list is enforced here either way
      results = found.filter((r) => permitted(r.url, options)).slice(0, options.context.results);
      services.searchCache.set(key, results);
    } catch (err) {
      return failure(providerErrorText(err));
    }
  }
  const numbers = inv.emit.registerSources(results.map((r) => ({ url: r.url, title: r.title })));
  const body =
    results.length === 0
      ? `No results for "${query}".`
      : [
          `Search results for "${query}":`,
          ...results.map((r, i) => `[${numbers[i]}] ${r.title}\nURL: ${r.url}${r.publishedAt ? `\nPublished: ${r.publishedAt}` : ''}\n${clip(r.snippet, options.context.snippetChars)}`),
          'Cite the sources you use as [n].',
        ].join('\n\n');
  return {
    kind: 'ok',
    output: body,
    detail: { sources: results.map((r) => r.url), results: results.map((r) => ({ url: r.url, title: r.title, published_at: r.publishedAt ?? null })) },
  };
}

async function openPage(services: WebSearchServices, options: Options, inv: GatewayInvocation): Promise<ToolOutcome> {
  const page = await loadPage(services, options, inv, inv.args.url);
  if (!isPage(page)) return page;
  const [n] = inv.emit.registerSources([{ url: page.finalUrl, title: page.title || page.finalUrl }]);
  const text = clip(page.text, options.context.pageChars);
  return toolResult(`[${n}] ${page.title || page.finalUrl}\nURL: ${page.finalUrl}\n\n${text}${page.truncated ? '\n…[page truncated]' : ''}`, { sources: [page.finalUrl] });
}

async function findInPage(services: WebSearchServices, options: Options, inv: GatewayInvocation): Promise<ToolOutcome> {
  const pattern = typeof inv.args.pattern === 'string' ? inv.args.pattern : '';
  if (!pattern) return failure("find_in_page needs a non-empty 'pattern' string");
  const page = await loadPage(services, options, inv, inv.args.url);
  if (!isPage(page)) return page;
  const [n] = inv.emit.registerSources([{ url: page.finalUrl, title: page.title || page.finalUrl }]);
  const matches = findInText(page.text, pattern, 10);
  if (matches.length === 0) return toolResult(`"${pattern}" was not found in [${n}] ${page.finalUrl}.`);
  return toolResult([`${matches.length} match(es) for "${pattern}" in [${n}] ${page.title || page.finalUrl}:`, ...matches.map((m) => `…${m.context}…`)].join('\n\n'));
}

async function loadPage(services: WebSearchServices, options: Options, inv: GatewayInvocation, rawUrl: unknown): Promise<Page | ToolOutcome> {
  const url = typeof rawUrl === 'string' ? rawUrl.trim() : '';
  if (!/^https?:\/\//i.test(url)) return failure('a page URL must be an absolute http(s) URL');
  if (!permitted(url, options)) return failure(options.allowedDomains ? `${url} is outside the allowed domains (${options.allowedDomains.join(', ')})` : `${url} is in a blocked domain`);
  const cached = services.pageCache.get(url);
  // the cache is shared across requests: a page that redirected elsewhere is checked again here
  if (cached) return permitted(cached.finalUrl, options) ? cached : failure(`${url} redirected outside the permitted domains`);
  if (!options.externalAccess) return failure(`${url} is not cached and live web access is disabled for this request`);
  try {
    const page = await services.pages.read(url, inv.signal);
    if (!permitted(page.finalUrl, options)) return failure(`${url} redirected outside the permitted domains`);
    // cached pages keep at most what any request may be shown or searched: memory stays bounded
    services.pageCache.set(url, page.text.length > MAX_CACHED_PAGE_CHARS ? { ...page, text: page.text.slice(0, MAX_CACHED_PAGE_CHARS), truncated: true } : page);
    return page;
  } catch (err) {
    return failure(`could not open ${url}: ${err instanceof PageReadError || err instanceof Error ? err.message : String(err)}`);
  }
}

function isPage(value: Page | ToolOutcome): value is Page {
  return 'finalUrl' in value;
}

function providerErrorText(err: unknown): string {
  if (err instanceof SearchProviderError && err.rateLimited) {
    return `the search provider is rate limiting requests${err.retryAfterSeconds !== undefined ? ` (retry after ${err.retryAfterSeconds} s)` : ''}; answer from what you know or try again later`;
  }
  return `the search failed: ${err instanceof Error ? err.message : String(err)}`;
}

function failure(message: string): ToolOutcome {
  return toolError(message);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
