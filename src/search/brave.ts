import { decodeEntities } from './html-entities.js';
import {
  clampCount,
  finishResults,
  httpError,
  malformed,
  providerRequest,
  str,
  withSiteOperators,
  type SearchProvider,
  type SearchRequest,
  type SearchResult,
  type UserLocation,
} from './provider.js';

/**
 * Brave Search API, web search (`GET https://api.search.brave.com/res/v1/web/search`,
 * `X-Subscription-Token` header; https://api-dashboard.search.brave.com/app/documentation/web-search).
 *
 * Request mapping:
 * - `q`: the query; allowed domains become `site:` operators (Brave has no include-domains
 *   parameter short of Goggles) — the caller filters afterwards too.
 * - `count`: the requested count, clamped to Brave's 1–20.
 * - `country`: userLocation.country when it is one of Brave's supported result countries,
 *   `ALL` (worldwide) for any other country, omitted without a location (Brave's default, US).
 * - `search_lang` is not sent: the request carries no language (Brave defaults to `en`).
 * - Location headers: `X-Loc-Country`, `X-Loc-City`, `X-Loc-State` (region codes of up to 3
 *   characters) or `X-Loc-State-Name`, `X-Loc-Timezone` — only values that are plain ASCII,
 *   since HTTP header values cannot carry other text.
 *
 * Response: `web.results[].{title, url, description, page_age, age}`; descriptions carry
 * `<strong>` highlighting and entities, which are stripped. `publishedAt` is `page_age`
 * (an ISO timestamp) or else `age` (Brave's display date).
 *
 * 429 answers carry `X-RateLimit-Reset: <per-second window>, <per-month window>` (seconds);
 * the retry delay is the reset of an exhausted window (per `X-RateLimit-Remaining`), else the first.
 */

export interface BraveOptions {
  apiKey: string;
  timeoutMs: number;
  /** Base URL override (default https://api.search.brave.com); `/res/v1/web/search` is appended unless already there. */
  baseUrl?: string;
}

export const BRAVE_DEFAULT_BASE_URL = 'https://api.search.brave.com';
const PATH = '/res/v1/web/search';
const LABEL = 'Brave Search API';

/** Countries Brave's `country` parameter accepts (its "Country Codes" table). */
export const BRAVE_COUNTRIES: ReadonlySet<string> = new Set([
  'AR', 'AU', 'AT', 'BE', 'BR', 'CA', 'CL', 'DK', 'FI', 'FR', 'DE', 'GR', 'HK', 'IN', 'ID', 'IT', 'JP', 'KR', 'MY', 'MX',
  'NL', 'NZ', 'NO', 'CN', 'PL', 'PT', 'PH', 'RU', 'SA', 'ZA', 'ES', 'SE', 'CH', 'TW', 'TR', 'GB', 'US',
]);

export class BraveProvider implements SearchProvider {
  readonly name = 'brave';
  private readonly endpoint: string;

  constructor(private readonly options: BraveOptions) {
    const base = (options.baseUrl ?? BRAVE_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.endpoint = base.endsWith(PATH) ? base : `${base}${PATH}`;
  }

  async search(request: SearchRequest): Promise<SearchResult[]> {
    const url = new URL(this.endpoint);
    url.searchParams.set('q', withSiteOperators(request.query, request.allowedDomains));
    url.searchParams.set('count', String(clampCount(request.count, 1, 20)));
    const country = braveCountry(request.userLocation?.country);
    if (country) url.searchParams.set('country', country);
    const secrets = [this.options.apiKey];
    const response = await providerRequest({
      label: LABEL,
      url: url.href,
      headers: { accept: 'application/json', 'x-subscription-token': this.options.apiKey, ...locationHeaders(request.userLocation) },
      timeoutMs: this.options.timeoutMs,
      signal: request.signal,
      secrets,
    });
    if (response.status < 200 || response.status >= 300) {
      throw httpError(LABEL, response, { secrets, retryAfterSeconds: rateLimitReset(response.headers) });
    }
    const body = response.json as { type?: unknown; web?: { results?: unknown } } | undefined;
    if (!body || typeof body !== 'object') throw malformed(LABEL, 'the body is not JSON');
    // No `web` section means no web results for the query.
    const results = body.web && Array.isArray(body.web.results) ? body.web.results : [];
    return finishResults(results.map(toResult), clampCount(request.count, 0, 20));
  }
}

function braveCountry(country: string | undefined): string | undefined {
  const code = str(country)?.toUpperCase();
  if (!code) return undefined;
  return BRAVE_COUNTRIES.has(code) ? code : 'ALL';
}

const PLAIN_HEADER_VALUE = /^[\x20-\x7e]{1,100}$/;

function locationHeaders(location: UserLocation | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!location) return headers;
  const put = (name: string, value: string | undefined) => {
    const v = str(value);
    if (v && PLAIN_HEADER_VALUE.test(v)) headers[name] = v;
  };
  const country = str(location.country)?.toUpperCase();
  if (country && /^[A-Z]{2}$/.test(country)) headers['x-loc-country'] = country;
  put('x-loc-city', location.city);
  const region = str(location.region);
  if (region && /^[A-Za-z0-9]{1,3}$/.test(region)) headers['x-loc-state'] = region.toUpperCase();
  else put('x-loc-state-name', region);
  put('x-loc-timezone', location.timezone);
  return headers;
}

/** Seconds until an exhausted quota window resets (`X-RateLimit-Reset` / `X-RateLimit-Remaining`). */
export function rateLimitReset(headers: Headers): number | undefined {
  const resets = numberList(headers.get('x-ratelimit-reset'));
  if (resets.length === 0) return undefined;
  const remaining = numberList(headers.get('x-ratelimit-remaining'));
  const exhausted = resets.filter((_, i) => remaining[i] === 0);
  return exhausted.length > 0 ? Math.max(...exhausted) : resets[0];
}

function numberList(value: string | null): number[] {
  if (!value) return [];
  return value
    .split(',')
    .map((part) => Number(part.trim()))
    .filter((n) => Number.isFinite(n) && n >= 0);
}

/** Brave marks query terms with <strong> and escapes text as HTML. */
function plain(text: string | undefined): string {
  if (!text) return '';
  return decodeEntities(text.replace(/<[^>]{0,200}>/g, '')).replace(/\s+/g, ' ').trim();
}

function toResult(raw: unknown): SearchResult {
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const url = str(r.url) ?? '';
  const result: SearchResult = { title: plain(str(r.title)) || url, url, snippet: plain(str(r.description)) };
  const published = str(r.page_age) ?? str(r.age);
  if (published) result.publishedAt = published;
  return result;
}
