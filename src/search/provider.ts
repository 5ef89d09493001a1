import { fetch as undiciFetch } from 'undici';
import { describeNetworkError } from '../net/network-error.js';

/**
 * The contract every web search backend implements, plus the HTTP plumbing the API-backed ones
 * share (timeouts, capped bodies, error shaping that never leaks the API key).
 */

export interface UserLocation {
  country?: string;
  city?: string;
  region?: string;
  timezone?: string;
}

export interface SearchRequest {
  query: string;
  /** How many results to return (from search_context_size: low 3, medium 5, high 10 — decided by the caller). */
  count: number;
  /** Only results on these domains (subdomains included). Providers that support it get it natively; results are ALSO filtered afterwards by the caller. */
  allowedDomains?: string[];
  userLocation?: UserLocation;
  signal: AbortSignal;
}

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
  publishedAt?: string;
}

export interface SearchProvider {
  readonly name: string;
  search(request: SearchRequest): Promise<SearchResult[]>;
}

/** A provider failure; `rateLimited` for 429 (and Tavily's usage-limit codes), `retryAfterSeconds` when the API says. Never includes the API key in its message. */
export class SearchProviderError extends Error {
  override readonly name = 'SearchProviderError';

  constructor(
    message: string,
    readonly status?: number,
    readonly rateLimited = false,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** Lowercase host without a trailing dot or a leading "www." on the pattern side; "" when unparseable. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return '';
  }
}

/** "https://Example.com/x", "*.example.com", ".example.com", "example.com." → "example.com". */
export function normalizeDomain(domain: string): string {
  let d = domain.trim().toLowerCase();
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(d)) d = hostOf(d);
  d = d.replace(/^\*\./, '').replace(/^\.+/, '').replace(/\.+$/, '');
  const slash = d.indexOf('/');
  if (slash >= 0) d = d.slice(0, slash);
  return d.replace(/:\d+$/, '');
}

/** Domain filter helper: `example.com` allows `example.com` and `docs.example.com`, not `badexample.com`. */
export function domainAllowed(url: string, allowedDomains: readonly string[] | undefined): boolean {
  if (!allowedDomains || allowedDomains.length === 0) return true;
  const host = hostOf(url);
  if (host === '') return false;
  return allowedDomains.some((entry) => {
    const domain = normalizeDomain(entry);
    return domain !== '' && (host === domain || host.endsWith(`.${domain}`));
  });
}

/** The allowed domains, normalized, deduplicated, empty entries dropped. */
export function cleanDomains(allowedDomains: readonly string[] | undefined): string[] {
  if (!allowedDomains) return [];
  return [...new Set(allowedDomains.map(normalizeDomain).filter((d) => d !== ''))];
}

/**
 * The query with `site:` operators for engines that only filter through query syntax (SearXNG,
 * Brave): `q site:a.com` for one domain, `q site:a.com OR site:b.com` for several.
 */
export function withSiteOperators(query: string, allowedDomains: readonly string[] | undefined): string {
  const domains = cleanDomains(allowedDomains);
  if (domains.length === 0) return query;
  return `${query} ${domains.map((d) => `site:${d}`).join(' OR ')}`;
}

/** Count clamped to an integer in [min, max]. */
export function clampCount(count: number, min: number, max: number): number {
  const n = Number.isFinite(count) ? Math.floor(count) : min;
  return Math.min(max, Math.max(min, n));
}

/** Seconds from a `Retry-After` header (delta-seconds or HTTP-date), undefined when absent or unparseable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed));
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** Replaces every occurrence of the secrets in `text` (API keys must never reach a message). */
export function redact(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('***');
  return out;
}

// Provider responses are small JSON documents; anything far larger is a misbehaving endpoint.
const MAX_PROVIDER_RESPONSE_BYTES = 5_000_000;
const MAX_DETAIL_CHARS = 300;

export interface ProviderHttpRequest {
  /** Provider label for messages ("Brave Search API"). */
  label: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Strings to scrub from any message (the API key). */
  secrets?: ReadonlyArray<string | undefined>;
}

export interface ProviderHttpResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
  text: string;
}

/**
 * One request to a provider API through undici (operator-configured URLs, so not guarded), with a
 * timeout covering connect, headers and body. Resolves for any HTTP status — the caller decides
 * what an error status means — and rejects with a SearchProviderError on timeout or network
 * failure, or with the caller's abort reason when `signal` was aborted.
 */
export async function providerRequest(request: ProviderHttpRequest): Promise<ProviderHttpResponse> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = AbortSignal.any([request.signal, timeout]);
  const scrub = (text: string) => redact(text, request.secrets ?? []);
  try {
    const response = await undiciFetch(request.url, {
      method: request.method ?? 'GET',
      headers: request.headers,
      body: request.body,
      signal,
      redirect: 'follow',
    });
    const text = await readCapped(response.body, MAX_PROVIDER_RESPONSE_BYTES, request.label);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers as unknown as Headers, json, text };
  } catch (err) {
    if (request.signal.aborted) throw request.signal.reason ?? err;
    if (err instanceof SearchProviderError) throw err;
    if (timeout.aborted) throw new SearchProviderError(`${request.label} did not answer within ${request.timeoutMs} ms`);
    throw new SearchProviderError(scrub(`${request.label} request failed: ${describeNetworkError(err)}`));
  }
}

async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number, label: string): Promise<string> {
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new SearchProviderError(`${label} response is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A short human detail from an error body: common JSON error shapes, else nothing (HTML error pages are not useful). */
export function errorDetail(json: unknown): string | undefined {
  const pick = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);
  if (!json || typeof json !== 'object') return undefined;
  const body = json as Record<string, unknown>;
  // Brave's error body has `error`, some of its endpoints an `errors` list; Tavily nests `detail.error`.
  const error = body.error ?? (Array.isArray(body.errors) ? body.errors[0] : undefined);
  const detail = body.detail;
  let found: string | undefined;
  if (error && typeof error === 'object') {
    const e = error as Record<string, unknown>;
    const code = pick(e.code);
    const text = pick(e.detail) ?? pick(e.message);
    found = code && text ? `${code}: ${text}` : (text ?? code);
  }
  found ??= pick(error);
  if (!found && detail && typeof detail === 'object') found = pick((detail as Record<string, unknown>).error) ?? pick((detail as Record<string, unknown>).message);
  found ??= pick(detail) ?? pick(body.message);
  if (!found) return undefined;
  return found.length > MAX_DETAIL_CHARS ? `${found.slice(0, MAX_DETAIL_CHARS)}…` : found;
}

/**
 * The SearchProviderError for a non-2xx provider response. 429 (and any status listed in
 * `rateLimitStatuses`) is marked rate limited; `retryAfterSeconds` comes from the caller
 * (provider-specific headers) or `Retry-After`.
 */
export function httpError(
  label: string,
  response: ProviderHttpResponse,
  options: { secrets?: ReadonlyArray<string | undefined>; rateLimitStatuses?: readonly number[]; retryAfterSeconds?: number; hint?: string } = {},
): SearchProviderError {
  const rateLimited = response.status === 429 || (options.rateLimitStatuses ?? []).includes(response.status);
  const retryAfter = options.retryAfterSeconds ?? parseRetryAfter(response.headers.get('retry-after'));
  const detail = errorDetail(response.json);
  const parts = [`${label} returned HTTP ${response.status}`];
  if (detail) parts.push(`: ${detail}`);
  if (options.hint) parts.push(` (${options.hint})`);
  return new SearchProviderError(redact(parts.join(''), options.secrets ?? []), response.status, rateLimited, rateLimited ? retryAfter : undefined);
}

/** A response body that should be JSON but is not. */
export function malformed(label: string, what: string): SearchProviderError {
  return new SearchProviderError(`${label} returned an unexpected response: ${what}`);
}

/** Trimmed string or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Whether `url` is an absolute http(s) URL (results without one are dropped). */
export function isWebUrl(url: string | undefined): url is string {
  if (!url) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Drops results without a usable URL and repeated URLs, keeps provider order, stops at `count`. */
export function finishResults(results: Iterable<SearchResult>, count: number): SearchResult[] {
  const out: SearchResult[] = [];
  const seen = new Set<string>();
  for (const result of results) {
    if (out.length >= count) break;
    if (!isWebUrl(result.url) || seen.has(result.url)) continue;
    seen.add(result.url);
    out.push(result);
  }
  return out;
}
