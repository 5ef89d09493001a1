import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One local server speaking the three search APIs' documented wire formats, at their documented
 * paths, routed by method + path:
 *   GET  /search?q=…&format=json     SearXNG JSON API (docs.searxng.org/dev/search_api)
 *   GET  /res/v1/web/search          Brave Web Search API (X-Subscription-Token)
 *   POST /search                     Tavily Search API (Authorization: Bearer tvly-…)
 * It records every request, answers with responses shaped like the providers' documented
 * examples, and can be told to fail (429 with rate-limit headers, 401, 500, …) or hang on the
 * next request. The engines' `site:` operators and Tavily's include_domains / max_results are
 * honoured, as the real services do.
 */

export type FakeApi = 'searxng' | 'brave' | 'tavily' | 'unknown';

export interface RecordedRequest {
  api: FakeApi;
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed JSON body (Tavily), when there was one. */
  json?: unknown;
}

export interface FailureOptions {
  /** `Retry-After` header value. */
  retryAfter?: string;
  /** Brave's `X-RateLimit-Reset` (default "1, 1419704"). */
  rateLimitReset?: string;
  /** Brave's `X-RateLimit-Remaining` (default "0, 14953"). */
  rateLimitRemaining?: string;
}

export interface FakeSearchApis {
  /** http://127.0.0.1:<port> — the base URL for every provider. */
  url: string;
  braveKey: string;
  tavilyKey: string;
  requests: RecordedRequest[];
  /** The next request (any API) is answered with `status`, in that API's error format. */
  failNext(status: number, options?: FailureOptions): void;
  /** The next request is never answered. */
  hangNext(): void;
  /** Forgets recorded requests and pending failures. */
  reset(): void;
  close(): Promise<void>;
}

// --- SearXNG ------------------------------------------------------------------------------------

interface SearxngFixture {
  url: string;
  title: string;
  content: string;
  engines: string[];
  score: number;
  publishedDate: string | null;
}

const SEARXNG_RESULTS: SearxngFixture[] = [
  {
    url: 'https://tokio.rs/tokio/tutorial',
    title: 'Tutorial | Tokio - An asynchronous Rust runtime',
    content: 'Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks needed for writing networking applications.',
    engines: ['duckduckgo', 'google', 'brave'],
    score: 9.0,
    publishedDate: null,
  },
  {
    url: 'https://rust-lang.github.io/async-book/',
    title: 'Asynchronous Programming in Rust',
    content: 'This book aims to be a comprehensive, up-to-date guide to using Rust\'s async language features and libraries.',
    engines: ['google', 'bing'],
    score: 4.5,
    publishedDate: '2024-03-18T00:00:00',
  },
  {
    url: 'https://docs.rs/tokio/latest/tokio/',
    title: 'tokio - Rust',
    content: 'A runtime for writing reliable network applications without compromising speed.',
    engines: ['duckduckgo'],
    score: 2.0,
    publishedDate: null,
  },
  {
    url: 'https://docs.rs/futures/latest/futures/',
    title: 'futures - Rust',
    content: 'Abstractions for asynchronous programming.',
    engines: ['bing'],
    score: 1.5,
    publishedDate: '2023-11-02T10:15:00',
  },
  {
    url: 'https://blog.rust-lang.org/2023/12/21/async-fn-rpit-in-traits.html',
    title: 'Announcing async fn and return-position impl Trait in traits',
    content: 'The Rust Async Working Group is excited to announce major progress towards our goal of enabling the use of async fn in traits.',
    engines: ['google'],
    score: 1.2,
    publishedDate: '2023-12-21T00:00:00',
  },
  {
    url: 'https://users.rust-lang.org/t/async-rust-is-hard/100001',
    title: 'Async Rust is hard - help - The Rust Programming Language Forum',
    content: 'I have been trying to understand pinning for days…',
    engines: ['duckduckgo'],
    score: 0.8,
    publishedDate: null,
  },
];

function searxngResult(fixture: SearxngFixture, position: number) {
  const parsed = new URL(fixture.url);
  return {
    url: fixture.url,
    title: fixture.title,
    content: fixture.content,
    publishedDate: fixture.publishedDate,
    thumbnail: '',
    engine: fixture.engines[0],
    template: 'default.html',
    parsed_url: [parsed.protocol.replace(':', ''), parsed.host, parsed.pathname, '', parsed.search.replace('?', ''), ''],
    img_src: '',
    priority: '',
    engines: fixture.engines,
    positions: fixture.engines.map(() => position + 1),
    score: fixture.score,
    category: 'general',
  };
}

// --- Brave ----------------------------------------------------------------------------------------

interface BraveFixture {
  title: string;
  url: string;
  description: string;
  age?: string;
  page_age?: string;
  profileName: string;
}

const BRAVE_RESULTS: BraveFixture[] = [
  {
    title: 'Node.js — Run JavaScript Everywhere',
    url: 'https://nodejs.org/en',
    description: '<strong>Node.js</strong>® is a free, open-source, cross-platform JavaScript runtime environment that lets developers create servers, web apps, command line tools and scripts.',
    age: 'March 4, 2025',
    page_age: '2025-03-04T12:30:00',
    profileName: 'Node.js',
  },
  {
    title: 'Node.js v20 documentation &amp; API reference',
    url: 'https://nodejs.org/docs/latest-v20.x/api/',
    description: 'The <strong>Node.js</strong> API documentation: &quot;fs&quot;, &quot;http&quot;, streams &amp; more.',
    profileName: 'Node.js',
  },
  {
    title: 'Node.js - Wikipedia',
    url: 'https://en.wikipedia.org/wiki/Node.js',
    description: '<strong>Node.js</strong> is a cross-platform, open-source JavaScript runtime environment that can run on Windows, Linux, Unix, macOS, and more.',
    age: '2 days ago',
    profileName: 'Wikipedia',
  },
  {
    title: 'nodejs/node: Node.js JavaScript runtime',
    url: 'https://github.com/nodejs/node',
    description: 'Node.js JavaScript runtime ✨🐢🚀✨. Contribute to nodejs/node development by creating an account on GitHub.',
    page_age: '2025-05-30T08:00:00',
    profileName: 'GitHub',
  },
];

function braveResult(fixture: BraveFixture) {
  const parsed = new URL(fixture.url);
  return {
    title: fixture.title,
    url: fixture.url,
    is_source_local: false,
    is_source_both: false,
    description: fixture.description,
    ...(fixture.page_age ? { page_age: fixture.page_age } : {}),
    ...(fixture.age ? { age: fixture.age } : {}),
    profile: { name: fixture.profileName, url: fixture.url, long_name: parsed.hostname, img: `https://imgs.search.brave.com/${parsed.hostname}.png` },
    language: 'en',
    family_friendly: true,
    type: 'search_result',
    subtype: 'generic',
    is_live: false,
    meta_url: { scheme: 'https', netloc: parsed.hostname, hostname: parsed.hostname, favicon: `https://imgs.search.brave.com/favicon/${parsed.hostname}`, path: `› ${parsed.pathname.replace(/^\//, '')}` },
  };
}

// --- Tavily ---------------------------------------------------------------------------------------

const TAVILY_RESULTS = [
  {
    title: 'Lionel Messi Facts | Britannica',
    url: 'https://www.britannica.com/facts/Lionel-Messi',
    content: 'Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation.',
    score: 0.81025416,
    raw_content: null,
  },
  {
    title: 'Lionel Messi - Wikipedia',
    url: 'https://en.wikipedia.org/wiki/Lionel_Messi',
    content: 'Lionel Andrés "Leo" Messi is an Argentine professional footballer who plays as a forward for and captains both Major League Soccer club Inter Miami and the Argentina national team.',
    score: 0.7901,
    raw_content: null,
  },
  {
    title: 'Messi scores twice as Inter Miami win',
    url: 'https://www.espn.com/soccer/story/_/id/41234567/messi-scores-twice',
    content: 'Lionel Messi scored twice and added an assist as Inter Miami beat the visitors 3-1.',
    score: 0.66,
    raw_content: null,
    published_date: 'Sun, 18 May 2025 02:10:00 GMT',
  },
  {
    title: 'Lionel Messi | Biography, Barcelona, PSG, Ballon d\'Or, Inter Miami, & Facts | Britannica',
    url: 'https://www.britannica.com/biography/Lionel-Messi',
    content: 'Lionel Messi, Argentine-born football (soccer) player who received a record-setting eight Ballon d\'Or awards.',
    score: 0.55,
    raw_content: null,
  },
];

// --------------------------------------------------------------------------------------------------

function siteDomains(query: string): string[] {
  return [...query.matchAll(/\bsite:(\S+)/g)].map((m) => (m[1] as string).toLowerCase());
}

function onDomains(url: string, domains: readonly string[]): boolean {
  if (domains.length === 0) return true;
  const host = new URL(url).hostname;
  return domains.some((d) => host === d || host.endsWith(`.${d}`));
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendHtml(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html), ...headers });
  res.end(html);
}

function classify(method: string, path: string): FakeApi {
  if (method === 'GET' && path === '/res/v1/web/search') return 'brave';
  if (method === 'POST' && path === '/search') return 'tavily';
  if (method === 'GET' && path === '/search') return 'searxng';
  return 'unknown';
}

export async function startFakeSearchApis(options: { braveKey?: string; tavilyKey?: string } = {}): Promise<FakeSearchApis> {
  const braveKey = options.braveKey ?? 'BSA-test-key-0123456789';
  const tavilyKey = options.tavilyKey ?? 'tvly-test-key-0123456789';
  const requests: RecordedRequest[] = [];
  const failures: Array<{ status: number; options: FailureOptions } | 'hang'> = [];
  const hanging = new Set<ServerResponse>();

  const fail = (api: FakeApi, req: RecordedRequest, res: ServerResponse, status: number, opts: FailureOptions) => {
    const retry: Record<string, string> = opts.retryAfter !== undefined ? { 'retry-after': opts.retryAfter } : {};
    // What the client presented as its key, echoed back by some error bodies (it must not reach messages).
    const presented = String(req.headers['x-subscription-token'] ?? req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
    if (api === 'brave') {
      const errors: Record<number, { code: string; detail: string }> = {
        401: { code: 'SUBSCRIPTION_TOKEN_INVALID', detail: `The provided subscription token '${presented}' is invalid.` },
        429: { code: 'RATE_LIMITED', detail: 'Request rate limit exceeded for plan.' },
        500: { code: 'INTERNAL_ERROR', detail: 'An unexpected error occurred.' },
      };
      const error = errors[status] ?? { code: 'ERROR', detail: `Error ${status}.` };
      const headers: Record<string, string> =
        status === 429
          ? {
              'x-ratelimit-limit': '1, 15000',
              'x-ratelimit-policy': '1;w=1, 15000;w=2592000',
              'x-ratelimit-remaining': opts.rateLimitRemaining ?? '0, 14953',
              'x-ratelimit-reset': opts.rateLimitReset ?? '1, 1419704',
              ...retry,
            }
          : retry;
      const meta = status === 429 ? { plan: 'Free', rate_limit: 1, rate_current: 2, quota_limit: 15000, quota_current: 47, component: 'rate_limiter' } : { component: status === 401 ? 'authentication' : 'api' };
      sendJson(res, status, { type: 'ErrorResponse', error: { id: 'c1a7bb9e-6c3b-4c4b-9b1c-5a4d0f6e2a11', status, code: error.code, detail: error.detail, meta }, time: 1748563200 }, headers);
      return;
    }
    if (api === 'tavily') {
      const messages: Record<number, string> = {
        401: `Unauthorized: missing or invalid API key ${presented}.`,
        429: 'Your request has been blocked due to excessive requests. Please reduce rate of requests.',
        432: "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
        433: 'This request exceeds the pay-as-you-go limit. You can increase your limit on the Tavily dashboard.',
        500: 'Internal Server Error',
      };
      sendJson(res, status, { detail: { error: messages[status] ?? `Error ${status}` } }, retry);
      return;
    }
    // SearXNG answers errors with HTML pages (its limiter's 429 included).
    const titles: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 429: 'Too Many Requests', 500: 'Internal Server Error' };
    sendHtml(res, status, `<!doctype html><title>${status} ${titles[status] ?? 'Error'}</title><h1>${titles[status] ?? 'Error'}</h1>`, retry);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const method = req.method ?? 'GET';
      const api = classify(method, url.pathname);
      const body = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = { api, method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body };
      if (body !== '' && String(req.headers['content-type'] ?? '').includes('json')) {
        try {
          recorded.json = JSON.parse(body);
        } catch {
          // recorded as text only
        }
      }
      requests.push(recorded);

      const failure = failures.shift();
      if (failure === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (failure) return fail(api, recorded, res, failure.status, failure.options);

      switch (api) {
        case 'searxng':
          return searxng(recorded, res);
        case 'brave':
          if (req.headers['x-subscription-token'] !== braveKey) {
            // What Brave answers for a wrong token (422, code SUBSCRIPTION_TOKEN_INVALID).
            return sendJson(res, 422, { type: 'ErrorResponse', error: { id: 'd0e1f2a3-0000-4000-8000-000000000001', status: 422, code: 'SUBSCRIPTION_TOKEN_INVALID', detail: 'The provided subscription token is invalid.', meta: { component: 'authentication' } }, time: 1748563200 });
          }
          return brave(recorded, res);
        case 'tavily':
          if (req.headers.authorization !== `Bearer ${tavilyKey}`) return sendJson(res, 401, { detail: { error: 'Unauthorized: missing or invalid API key.' } });
          return tavily(recorded, res);
        default:
          return sendHtml(res, 404, '<!doctype html><title>404 Not Found</title><h1>Not Found</h1>');
      }
    });
  });

  function searxng(req: RecordedRequest, res: ServerResponse): void {
    const q = req.query.q ?? '';
    if (req.query.format !== 'json') {
      // An instance without the JSON format enabled answers 403; without format= it serves HTML.
      if (req.query.format) return sendHtml(res, 403, '<!doctype html><title>403 Forbidden</title><h1>Forbidden</h1>');
      return sendHtml(res, 200, `<!doctype html><title>${q} - SearXNG</title><main>results page</main>`);
    }
    const domains = siteDomains(q);
    const results = SEARXNG_RESULTS.filter((r) => onDomains(r.url, domains)).map(searxngResult);
    sendJson(res, 200, {
      query: q,
      number_of_results: 0,
      results,
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: ['rust async await', 'tokio vs async-std', 'rust futures tutorial'],
      unresponsive_engines: [['wikidata', 'timeout']],
    });
  }

  function brave(req: RecordedRequest, res: ServerResponse): void {
    const q = req.query.q ?? '';
    const count = Math.min(20, Number(req.query.count ?? '20'));
    const domains = siteDomains(q);
    const results = BRAVE_RESULTS.filter((r) => onDomains(r.url, domains)).slice(0, count).map(braveResult);
    const body: Record<string, unknown> = {
      query: {
        original: q,
        show_strict_warning: false,
        is_navigational: false,
        is_news_breaking: false,
        spellcheck_off: true,
        country: (req.query.country ?? 'us').toLowerCase(),
        bad_results: false,
        should_fallback: false,
        postal_code: '',
        city: String(req.headers['x-loc-city'] ?? ''),
        header_country: String(req.headers['x-loc-country'] ?? ''),
        more_results_available: true,
        state: '',
      },
      mixed: { type: 'mixed', main: results.map((_, index) => ({ type: 'web', index, all: false })), top: [], side: [] },
      type: 'search',
    };
    // Brave leaves `web` out when there are no web results.
    if (results.length > 0) body.web = { type: 'search', results, family_friendly: true };
    sendJson(res, 200, body, { 'x-ratelimit-limit': '1, 15000', 'x-ratelimit-policy': '1;w=1, 15000;w=2592000', 'x-ratelimit-remaining': '0, 14952', 'x-ratelimit-reset': '1, 1419703' });
  }

  function tavily(req: RecordedRequest, res: ServerResponse): void {
    const body = (req.json ?? {}) as { query?: string; max_results?: number; include_domains?: string[] };
    const domains = (body.include_domains ?? []).map((d) => d.toLowerCase());
    const results = TAVILY_RESULTS.filter((r) => onDomains(r.url, domains)).slice(0, body.max_results ?? 5);
    sendJson(res, 200, {
      query: body.query ?? '',
      follow_up_questions: null,
      answer: null,
      images: [],
      results,
      response_time: 1.09,
      request_id: '123e4567-e89b-12d3-a456-426614174111',
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    braveKey,
    tavilyKey,
    requests,
    failNext(status, opts = {}) {
      failures.push({ status, options: opts });
    },
    hangNext() {
      failures.push('hang');
    },
    reset() {
      requests.length = 0;
      failures.length = 0;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
