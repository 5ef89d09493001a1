import {
  finishResults,
  httpError,
  malformed,
  providerRequest,
  str,
  withSiteOperators,
  type SearchProvider,
  type SearchRequest,
  type SearchResult,
} from './provider.js';

/**
 * SearXNG's JSON API (`GET <instance>/search?q=…&format=json`, documented at
 * https://docs.searxng.org/dev/search_api.html). The instance must have `json` in
 * `search.formats` of its settings.yml, or it answers 403.
 *
 * Request mapping:
 * - `q`: the query; allowed domains become `site:` operators (`q site:a.com OR site:b.com`),
 *   which SearXNG passes to engines that understand them — the caller filters afterwards too.
 * - `format=json`, `pageno=1`, `categories=general` (web results, whatever the instance's UI default).
 * - count: SearXNG has no result-count parameter (one page is ~10–30 results); the first
 *   `count` results are kept.
 * - userLocation: not sent — SearXNG only has `language` (a UI/search language, not a region),
 *   and the request carries no language.
 * Credentials in the base URL (`https://user:pass@host/`) become HTTP Basic auth; an `apiKey`
 * is sent as `Authorization: Bearer …` for instances behind an authenticating proxy.
 */

export interface SearxngOptions {
  baseUrl: string;
  timeoutMs: number;
  apiKey?: string;
}

const LABEL = 'SearXNG';

export class SearxngProvider implements SearchProvider {
  readonly name = 'searxng';
  private readonly endpoint: URL;
  private readonly headers: Record<string, string> = { accept: 'application/json' };
  private readonly secrets: string[] = [];

  constructor(private readonly options: SearxngOptions) {
    const base = new URL(options.baseUrl);
    if (base.username || base.password) {
      const user = decodeURIComponent(base.username);
      const password = decodeURIComponent(base.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      this.secrets.push(password, base.password);
      base.username = '';
      base.password = '';
    }
    if (options.apiKey) {
      this.headers.authorization = `Bearer ${options.apiKey}`;
      this.secrets.push(options.apiKey);
    }
    base.search = '';
    base.hash = '';
    // "https://host/searx" and "https://host/searx/" both mean the instance at /searx/; an explicit …/search is kept.
    if (!base.pathname.endsWith('/search')) {
      if (!base.pathname.endsWith('/')) base.pathname += '/';
      base.pathname += 'search';
    }
    this.endpoint = base;
  }

  async search(request: SearchRequest): Promise<SearchResult[]> {
    const url = new URL(this.endpoint);
    url.searchParams.set('q', withSiteOperators(request.query, request.allowedDomains));
    url.searchParams.set('format', 'json');
    url.searchParams.set('pageno', '1');
    url.searchParams.set('categories', 'general');
    const response = await providerRequest({
      label: LABEL,
      url: url.href,
      headers: this.headers,
      timeoutMs: this.options.timeoutMs,
      signal: request.signal,
      secrets: this.secrets,
    });
    if (response.status < 200 || response.status >= 300) {
      throw httpError(LABEL, response, {
        secrets: this.secrets,
        hint: response.status === 403 ? "is 'json' enabled in search.formats of the instance's settings.yml?" : undefined,
      });
    }
    const body = response.json as { results?: unknown } | undefined;
    if (!body || typeof body !== 'object' || !Array.isArray(body.results)) throw malformed(LABEL, 'no results array (is the base URL a SearXNG instance?)');
    return finishResults(body.results.map(toResult), Math.max(0, Math.floor(request.count)));
  }
}

function toResult(raw: unknown): SearchResult {
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const url = str(r.url) ?? '';
  const result: SearchResult = { title: str(r.title) ?? url, url, snippet: str(r.content) ?? '' };
  const published = str(r.publishedDate);
  if (published) result.publishedAt = published;
  return result;
}
