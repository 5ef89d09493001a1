import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { McpServerRef } from '../../src/mcp/service.js';
import { BraveProvider, rateLimitReset } from '../../src/search/brave.js';
import { createSearchProvider, DEFAULT_WEB_SEARCH_CONFIG, type WebSearchConfig } from '../../src/search/create-provider.js';
import { McpSearchProvider, mcpSearchCallback, parseSearchToolOutput } from '../../src/search/mcp-provider.js';
import { domainAllowed, SearchProviderError, type SearchProvider, type SearchRequest } from '../../src/search/provider.js';
import { SearxngProvider } from '../../src/search/searxng.js';
import { TavilyProvider, tavilyCountry } from '../../src/search/tavily.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';

let apis: FakeSearchApis;

beforeAll(async () => {
  apis = await startFakeSearchApis();
});

afterAll(async () => {
  await apis.close();
});

beforeEach(() => {
  apis.reset();
});

function req(query: string, count: number, extra: Partial<SearchRequest> = {}): SearchRequest {
  return { query, count, signal: new AbortController().signal, ...extra };
}

function config(overrides: Partial<WebSearchConfig>): WebSearchConfig {
  return { ...DEFAULT_WEB_SEARCH_CONFIG, timeoutMs: 2_000, ...overrides };
}

/** The SearchProviderError a search rejected with. */
async function failure(provider: SearchProvider, request: SearchRequest): Promise<SearchProviderError> {
  const err = await provider.search(request).then(
    () => expect.unreachable('the search should have failed'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SearchProviderError);
  return err as SearchProviderError;
}

describe('SearXNG', () => {
  const provider = () => createSearchProvider(config({ provider: 'searxng', baseUrl: apis.url }))!;

  it('sends GET /search with q, format=json, pageno and categories, and keeps the first `count` results', async () => {
    const results = await provider().search(req('rust async', 3));
    expect(apis.requests).toHaveLength(1);
    const sent = apis.requests[0]!;
    expect(sent.method).toBe('GET');
    expect(sent.path).toBe('/search');
    expect(sent.query).toEqual({ q: 'rust async', format: 'json', pageno: '1', categories: 'general' });
    expect(sent.headers.accept).toBe('application/json');
    expect(sent.headers.authorization).toBeUndefined();
    expect(results).toEqual([
      {
        title: 'Tutorial | Tokio - An asynchronous Rust runtime',
        url: 'https://tokio.rs/tokio/tutorial',
        snippet: 'Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks needed for writing networking applications.',
      },
      {
        title: 'Asynchronous Programming in Rust',
        url: 'https://rust-lang.github.io/async-book/',
        snippet: "This book aims to be a comprehensive, up-to-date guide to using Rust's async language features and libraries.",
        publishedAt: '2024-03-18T00:00:00',
      },
      {
        title: 'tokio - Rust',
        url: 'https://docs.rs/tokio/latest/tokio/',
        snippet: 'A runtime for writing reliable network applications without compromising speed.',
      },
    ]);
  });

  it('passes allowed domains as site: operators in the query (SearXNG has no domain parameter)', async () => {
    const results = await provider().search(req('rust async', 5, { allowedDomains: ['docs.rs'] }));
    expect(apis.requests[0]!.query.q).toBe('rust async site:docs.rs');
    expect(results.map((r) => r.url)).toEqual(['https://docs.rs/tokio/latest/tokio/', 'https://docs.rs/futures/latest/futures/']);
    expect(results[1]).toEqual({ title: 'futures - Rust', url: 'https://docs.rs/futures/latest/futures/', snippet: 'Abstractions for asynchronous programming.', publishedAt: '2023-11-02T10:15:00' });

    await provider().search(req('rust async', 5, { allowedDomains: ['https://Docs.rs/', '*.rust-lang.org', 'docs.rs'] }));
    expect(apis.requests[1]!.query.q).toBe('rust async site:docs.rs OR site:rust-lang.org');
  });

  it('serves an instance under a path and turns URL credentials into Basic auth', async () => {
    const withPath = createSearchProvider(config({ provider: 'searxng', baseUrl: `${apis.url}/` }))!;
    await withPath.search(req('x', 1));
    expect(apis.requests[0]!.path).toBe('/search');

    const withAuth = createSearchProvider(config({ provider: 'searxng', baseUrl: apis.url.replace('http://', 'http://alice:s3cr%40t@') }))!;
    await withAuth.search(req('x', 1));
    expect(apis.requests[1]!.headers.authorization).toBe(`Basic ${Buffer.from('alice:s3cr@t').toString('base64')}`);
  });

  it('429 → rate limited with Retry-After', async () => {
    apis.failNext(429, { retryAfter: '30' });
    const err = await failure(provider(), req('rust async', 3));
    expect(err.status).toBe(429);
    expect(err.rateLimited).toBe(true);
    expect(err.retryAfterSeconds).toBe(30);
    expect(err.message).toBe('SearXNG returned HTTP 429');
  });

  it('403 explains the JSON format setting; 500 is a plain failure', async () => {
    apis.failNext(403);
    const forbidden = await failure(provider(), req('q', 3));
    expect(forbidden.status).toBe(403);
    expect(forbidden.message).toContain("is 'json' enabled in search.formats");
    apis.failNext(500);
    const broken = await failure(provider(), req('q', 3));
    expect(broken).toMatchObject({ status: 500, rateLimited: false, retryAfterSeconds: undefined, message: 'SearXNG returned HTTP 500' });
  });

  it('a URL that is not a SearXNG instance fails with its status', async () => {
    const wrong = new SearxngProvider({ baseUrl: `${apis.url}/nothing`, timeoutMs: 2_000 });
    const err = await failure(wrong, req('q', 3));
    expect(apis.requests[0]!.path).toBe('/nothing/search');
    expect(err.message).toBe('SearXNG returned HTTP 404');
  });

  it('times out against a server that never answers', async () => {
    apis.hangNext();
    const slow = new SearxngProvider({ baseUrl: apis.url, timeoutMs: 200 });
    const started = Date.now();
    const err = await failure(slow, req('q', 3));
    expect(err.message).toBe('SearXNG did not answer within 200 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('Brave', () => {
  const provider = () => createSearchProvider(config({ provider: 'brave', apiKey: apis.braveKey, baseUrl: apis.url }))!;

  it('sends GET /res/v1/web/search with q, count, country and the subscription token', async () => {
    const results = await provider().search(req('node.js', 5, { userLocation: { country: 'de', city: 'Berlin', region: 'Berlin', timezone: 'Europe/Berlin' } }));
    const sent = apis.requests[0]!;
    expect(sent.method).toBe('GET');
    expect(sent.path).toBe('/res/v1/web/search');
    expect(sent.query).toEqual({ q: 'node.js', count: '5', country: 'DE' });
    expect(sent.headers['x-subscription-token']).toBe(apis.braveKey);
    expect(sent.headers.accept).toBe('application/json');
    expect(sent.headers['x-loc-country']).toBe('DE');
    expect(sent.headers['x-loc-city']).toBe('Berlin');
    expect(sent.headers['x-loc-state-name']).toBe('Berlin');
    expect(sent.headers['x-loc-timezone']).toBe('Europe/Berlin');
    expect(results).toEqual([
      {
        title: 'Node.js — Run JavaScript Everywhere',
        url: 'https://nodejs.org/en',
        snippet: 'Node.js® is a free, open-source, cross-platform JavaScript runtime environment that lets developers create servers, web apps, command line tools and scripts.',
        publishedAt: '2025-03-04T12:30:00',
      },
      {
        title: 'Node.js v20 documentation & API reference',
        url: 'https://nodejs.org/docs/latest-v20.x/api/',
        snippet: 'The Node.js API documentation: "fs", "http", streams & more.',
      },
      {
        title: 'Node.js - Wikipedia',
        url: 'https://en.wikipedia.org/wiki/Node.js',
        snippet: 'Node.js is a cross-platform, open-source JavaScript runtime environment that can run on Windows, Linux, Unix, macOS, and more.',
        publishedAt: '2 days ago',
      },
      {
        title: 'nodejs/node: Node.js JavaScript runtime',
        url: 'https://github.com/nodejs/node',
        snippet: 'Node.js JavaScript runtime ✨🐢🚀✨. Contribute to nodejs/node development by creating an account on GitHub.',
        publishedAt: '2025-05-30T08:00:00',
      },
    ]);
  });

  it('clamps count to 20, sends ALL for countries Brave does not list, nothing without a location', async () => {
    await provider().search(req('q', 50, { userLocation: { country: 'EG', city: 'القاهرة', region: 'C' } }));
    expect(apis.requests[0]!.query).toEqual({ q: 'q', count: '20', country: 'ALL' });
    expect(apis.requests[0]!.headers['x-loc-country']).toBe('EG');
    expect(apis.requests[0]!.headers['x-loc-city']).toBeUndefined(); // not representable in a header
    expect(apis.requests[0]!.headers['x-loc-state']).toBe('C');
    await provider().search(req('q', 3));
    expect(apis.requests[1]!.query).toEqual({ q: 'q', count: '3' });
    expect(apis.requests[1]!.headers['x-loc-country']).toBeUndefined();
  });

  it('passes allowed domains as site: operators; no web section means no results', async () => {
    const results = await provider().search(req('node.js', 5, { allowedDomains: ['wikipedia.org', 'github.com'] }));
    expect(apis.requests[0]!.query.q).toBe('node.js site:wikipedia.org OR site:github.com');
    expect(results.map((r) => r.url)).toEqual(['https://en.wikipedia.org/wiki/Node.js', 'https://github.com/nodejs/node']);
    expect(await provider().search(req('node.js', 5, { allowedDomains: ['example.org'] }))).toEqual([]);
  });

  it('429 → rate limited, retry delay from X-RateLimit-Reset of the exhausted window', async () => {
    apis.failNext(429, { rateLimitReset: '1, 1419704', rateLimitRemaining: '0, 14953' });
    const perSecond = await failure(provider(), req('q', 5));
    expect(perSecond).toMatchObject({ status: 429, rateLimited: true, retryAfterSeconds: 1 });
    expect(perSecond.message).toBe('Brave Search API returned HTTP 429: RATE_LIMITED: Request rate limit exceeded for plan.');

    apis.failNext(429, { rateLimitReset: '1, 1419704', rateLimitRemaining: '1, 0' });
    const monthly = await failure(provider(), req('q', 5));
    expect(monthly.retryAfterSeconds).toBe(1419704);
    expect(rateLimitReset(new Headers({ 'x-ratelimit-reset': '7' }))).toBe(7);
  });

  it('401 and 500 fail without the API key in the message', async () => {
    apis.failNext(401);
    const unauthorized = await failure(provider(), req('q', 5));
    expect(unauthorized).toMatchObject({ status: 401, rateLimited: false });
    expect(unauthorized.message).toBe("Brave Search API returned HTTP 401: SUBSCRIPTION_TOKEN_INVALID: The provided subscription token '***' is invalid.");
    expect(unauthorized.message).not.toContain(apis.braveKey);
    apis.failNext(500);
    const broken = await failure(provider(), req('q', 5));
    expect(broken.status).toBe(500);
    expect(broken.message).toBe('Brave Search API returned HTTP 500: INTERNAL_ERROR: An unexpected error occurred.');
  });

  it('a wrong token is reported as Brave reports it', async () => {
    const wrongKey = new BraveProvider({ apiKey: 'BSA-wrong-key-999', baseUrl: apis.url, timeoutMs: 2_000 });
    const err = await failure(wrongKey, req('q', 5));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Brave Search API returned HTTP 422: SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid.');
  });

  it('times out against a server that never answers', async () => {
    apis.hangNext();
    const slow = new BraveProvider({ apiKey: apis.braveKey, baseUrl: apis.url, timeoutMs: 200 });
    const err = await failure(slow, req('q', 5));
    expect(err.message).toBe('Brave Search API did not answer within 200 ms');
  });

  it("a caller's abort is the caller's (not a provider failure)", async () => {
    apis.hangNext();
    const controller = new AbortController();
    const pending = provider().search(req('q', 5, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    const err = await pending.catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(SearchProviderError);
    expect((err as Error).name).toBe('AbortError');
  });
});

describe('Tavily', () => {
  const provider = () => createSearchProvider(config({ provider: 'tavily', apiKey: apis.tavilyKey, baseUrl: apis.url }))!;

  it('POSTs /search with a bearer token and the documented JSON body', async () => {
    const results = await provider().search(req('who is Leo Messi?', 3, { userLocation: { country: 'US', city: 'Miami' } }));
    const sent = apis.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/search');
    expect(sent.query).toEqual({});
    expect(sent.headers.authorization).toBe(`Bearer ${apis.tavilyKey}`);
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.json).toEqual({
      query: 'who is Leo Messi?',
      max_results: 3,
      search_depth: 'basic',
      topic: 'general',
      include_domains: [],
      exclude_domains: [],
      country: 'united states',
    });
    expect(results).toEqual([
      {
        title: 'Lionel Messi Facts | Britannica',
        url: 'https://www.britannica.com/facts/Lionel-Messi',
        snippet: 'Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest football players of his generation.',
      },
      {
        title: 'Lionel Messi - Wikipedia',
        url: 'https://en.wikipedia.org/wiki/Lionel_Messi',
        snippet: 'Lionel Andrés "Leo" Messi is an Argentine professional footballer who plays as a forward for and captains both Major League Soccer club Inter Miami and the Argentina national team.',
      },
      {
        title: 'Messi scores twice as Inter Miami win',
        url: 'https://www.espn.com/soccer/story/_/id/41234567/messi-scores-twice',
        snippet: 'Lionel Messi scored twice and added an assist as Inter Miami beat the visitors 3-1.',
        publishedAt: 'Sun, 18 May 2025 02:10:00 GMT',
      },
    ]);
  });

  it('sends allowed domains as include_domains, clamps max_results, omits unknown countries', async () => {
    const results = await provider().search(req('messi', 40, { allowedDomains: ['Britannica.com'], userLocation: { country: 'XK' } }));
    expect(apis.requests[0]!.json).toEqual({
      query: 'messi',
      max_results: 20,
      search_depth: 'basic',
      topic: 'general',
      include_domains: ['britannica.com'],
      exclude_domains: [],
    });
    expect(results.map((r) => r.url)).toEqual(['https://www.britannica.com/facts/Lionel-Messi', 'https://www.britannica.com/biography/Lionel-Messi']);
    expect([tavilyCountry('gb'), tavilyCountry('CZ'), tavilyCountry('south korea'), tavilyCountry('ZZ')]).toEqual(['united kingdom', 'czech republic', 'south korea', undefined]);
  });

  it('429 with Retry-After, 432 and 433 usage limits → rate limited', async () => {
    apis.failNext(429, { retryAfter: '12' });
    const tooMany = await failure(provider(), req('q', 3));
    expect(tooMany).toMatchObject({ status: 429, rateLimited: true, retryAfterSeconds: 12 });
    expect(tooMany.message).toBe('Tavily API returned HTTP 429: Your request has been blocked due to excessive requests. Please reduce rate of requests.');
    apis.failNext(432);
    const plan = await failure(provider(), req('q', 3));
    expect(plan).toMatchObject({ status: 432, rateLimited: true, retryAfterSeconds: undefined });
    expect(plan.message).toBe("Tavily API returned HTTP 432: This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com (plan usage limit exceeded)");
    apis.failNext(433);
    expect(await failure(provider(), req('q', 3))).toMatchObject({ status: 433, rateLimited: true });
  });

  it('401 and 500 fail without the API key in the message', async () => {
    apis.failNext(401);
    const unauthorized = await failure(provider(), req('q', 3));
    expect(unauthorized).toMatchObject({ status: 401, rateLimited: false });
    expect(unauthorized.message).toBe('Tavily API returned HTTP 401: Unauthorized: missing or invalid API key ***.');
    expect(unauthorized.message).not.toContain(apis.tavilyKey);
    apis.failNext(500);
    expect((await failure(provider(), req('q', 3))).message).toBe('Tavily API returned HTTP 500: Internal Server Error');
  });

  it('times out against a server that never answers', async () => {
    apis.hangNext();
    const slow = new TavilyProvider({ apiKey: apis.tavilyKey, baseUrl: apis.url, timeoutMs: 200 });
    expect((await failure(slow, req('q', 3))).message).toBe('Tavily API did not answer within 200 ms');
  });

  it('an unreachable endpoint is a provider failure without the key', async () => {
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const closed = new TavilyProvider({ apiKey: apis.tavilyKey, baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2_000 });
    const err = await failure(closed, req('q', 3));
    expect(err.message).toMatch(/^Tavily API request failed: .*ECONNREFUSED/);
    expect(err.message).not.toContain(apis.tavilyKey);
  });
});

describe('MCP-delegating provider', () => {
  it('calls back with the query (site: operators for allowed domains) and count, and parses JSON', async () => {
    const calls: Array<[string, number]> = [];
    const provider = createSearchProvider(config({ provider: 'mcp', mcpServer: 'search', mcpTool: 'web_search' }), {
      mcpSearch: async (query, count) => {
        calls.push([query, count]);
        return JSON.stringify({
          results: [
            { title: 'One', url: 'https://one.example/a', content: 'First result.', published_date: '2025-01-02' },
            { name: 'Two', link: 'https://two.example/b', description: 'Second result.' },
            { title: 'No URL', snippet: 'dropped' },
            { title: 'Three', url: 'https://three.example/c', snippet: 'Third.' },
          ],
        });
      },
    })!;
    expect(provider.name).toBe('mcp');
    const results = await provider.search(req('best pizza', 2, { allowedDomains: ['one.example'] }));
    expect(calls).toEqual([['best pizza site:one.example', 2]]);
    expect(results).toEqual([
      { title: 'One', url: 'https://one.example/a', snippet: 'First result.', publishedAt: '2025-01-02' },
      { title: 'Two', url: 'https://two.example/b', snippet: 'Second result.' },
    ]);
  });

  it('parses JSON arrays, fenced JSON, nested web.results and one JSON document per line', () => {
    expect(parseSearchToolOutput('[{"title":"A","url":"https://a.example/","snippet":"a"}]')).toEqual([{ title: 'A', url: 'https://a.example/', snippet: 'a' }]);
    expect(parseSearchToolOutput('```json\n{"web":{"results":[{"title":"B","url":"https://b.example/","description":"b"}]}}\n```')).toEqual([
      { title: 'B', url: 'https://b.example/', snippet: 'b' },
    ]);
    expect(parseSearchToolOutput('{"title":"C","url":"https://c.example/","text":"c"}\n{"title":"D","url":"https://d.example/","body":"d"}')).toEqual([
      { title: 'C', url: 'https://c.example/', snippet: 'c' },
      { title: 'D', url: 'https://d.example/', snippet: 'd' },
    ]);
    expect(parseSearchToolOutput('{"results":[]}')).toEqual([]);
  });

  it('parses labelled plain-text blocks (Title:/URL:/Description:)', () => {
    const text = [
      'Title: Pizza in Naples',
      'Description: The best pizzerias in Naples,',
      'ranked by locals.',
      'URL: https://naples.example/pizza',
      '',
      'Title: Pizza at home',
      'URL: https://home.example/pizza',
      'Published Date: 2024-06-01',
      'Author: Jane',
      'Text: Dough, sauce and a hot oven.',
    ].join('\n');
    expect(parseSearchToolOutput(text)).toEqual([
      { title: 'Pizza in Naples', url: 'https://naples.example/pizza', snippet: 'The best pizzerias in Naples, ranked by locals.' },
      { title: 'Pizza at home', url: 'https://home.example/pizza', snippet: 'Dough, sauce and a hot oven.', publishedAt: '2024-06-01' },
    ]);
  });

  it('parses markdown lists and "title / url / snippet" blocks', () => {
    const markdown = [
      '## Search results for "pizza"',
      '',
      '1. [Pizza - Wikipedia](https://en.wikipedia.org/wiki/Pizza)',
      '   Pizza is an Italian dish.',
      '2. **Neapolitan pizza**',
      '   https://pizza.example/neapolitan.',
      '   Soft, thin and charred.',
    ].join('\n');
    expect(parseSearchToolOutput(markdown)).toEqual([
      { title: 'Pizza - Wikipedia', url: 'https://en.wikipedia.org/wiki/Pizza', snippet: 'Pizza is an Italian dish.' },
      { title: 'Neapolitan pizza', url: 'https://pizza.example/neapolitan', snippet: 'Soft, thin and charred.' },
    ]);
    const plain = 'Margherita\nhttps://m.example/\nTomato, mozzarella, basil.\n\nMarinara\nhttps://mar.example/\n\nTomato, garlic, oregano.';
    expect(parseSearchToolOutput(plain)).toEqual([
      { title: 'Margherita', url: 'https://m.example/', snippet: 'Tomato, mozzarella, basil.' },
      { title: 'Marinara', url: 'https://mar.example/', snippet: 'Tomato, garlic, oregano.' },
    ]);
    expect(parseSearchToolOutput('No results found.')).toEqual([]);
    expect(parseSearchToolOutput('')).toEqual([]);
  });

  it('a failing or silent tool is a provider failure; mcpSearchCallback drives McpService.callTool', async () => {
    const failing = new McpSearchProvider(async () => {
      throw new Error('connection reset');
    }, { timeoutMs: 1_000 });
    expect((await failure(failing, req('q', 3))).message).toBe('The MCP search tool failed: connection reset');

    const silent = new McpSearchProvider(() => new Promise<string>(() => {}), { timeoutMs: 200 });
    expect((await failure(silent, req('q', 3))).message).toBe('The MCP search tool did not answer within 200 ms');

    const calls: unknown[] = [];
    const server = { label: 'search' } as McpServerRef;
    const service = {
      callTool: async (_server: McpServerRef, name: string, args: Record<string, unknown>, _signal: AbortSignal, timeoutMs: number) => {
        calls.push({ name, args, timeoutMs });
        return args.query === 'bad' ? { output: '', error: 'rate limited by upstream' } : { output: 'Title: X\nURL: https://x.example/', error: null };
      },
    };
    const viaService = new McpSearchProvider(mcpSearchCallback(service, server, 'web_search', 5_000), { timeoutMs: 1_000 });
    expect(await viaService.search(req('good', 4))).toEqual([{ title: 'X', url: 'https://x.example/', snippet: '' }]);
    expect(calls).toEqual([{ name: 'web_search', args: { query: 'good', count: 4 }, timeoutMs: 5_000 }]);
    expect((await failure(viaService, req('bad', 4))).message).toBe("MCP search tool 'web_search' on 'search' failed: rate limited by upstream");
  });
});

describe('createSearchProvider', () => {
  it('returns undefined for provider null and the named provider otherwise', () => {
    expect(createSearchProvider(DEFAULT_WEB_SEARCH_CONFIG)).toBeUndefined();
    expect(createSearchProvider(config({ provider: 'searxng', baseUrl: 'https://searx.example.org' }))?.name).toBe('searxng');
    expect(createSearchProvider(config({ provider: 'brave', apiKey: 'k' }))?.name).toBe('brave');
    expect(createSearchProvider(config({ provider: 'tavily', apiKey: 'tvly-k' }))?.name).toBe('tavily');
    expect(DEFAULT_WEB_SEARCH_CONFIG).toMatchObject({ maxPageBytes: 2_000_000, pageTimeoutMs: 15_000, maxRedirects: 5, cacheEntries: 500, cacheTtlMs: 3_600_000 });
  });

  it('names the missing or invalid field', () => {
    const mcpSearch = async () => '';
    expect(() => createSearchProvider(config({ provider: 'searxng' }))).toThrow("Invalid web search config: baseUrl is required for provider 'searxng'");
    expect(() => createSearchProvider(config({ provider: 'searxng', baseUrl: 'not a url' }))).toThrow("Invalid web search config: baseUrl 'not a url' is not a valid URL");
    expect(() => createSearchProvider(config({ provider: 'searxng', baseUrl: 'ftp://searx.example' }))).toThrow(/baseUrl must be an http\(s\) URL/);
    expect(() => createSearchProvider(config({ provider: 'brave' }))).toThrow("Invalid web search config: apiKey is required for provider 'brave'");
    expect(() => createSearchProvider(config({ provider: 'tavily', apiKey: '  ' }))).toThrow("Invalid web search config: apiKey is required for provider 'tavily'");
    expect(() => createSearchProvider(config({ provider: 'mcp', mcpTool: 'search' }), { mcpSearch })).toThrow("Invalid web search config: mcpServer is required for provider 'mcp'");
    expect(() => createSearchProvider(config({ provider: 'mcp', mcpServer: 'search' }), { mcpSearch })).toThrow("Invalid web search config: mcpTool is required for provider 'mcp'");
    expect(() => createSearchProvider(config({ provider: 'mcp', mcpServer: 'search', mcpTool: 'web_search' }))).toThrow(/mcpServer needs an MCP search callback/);
    expect(() => createSearchProvider(config({ provider: 'bing' as never }))).toThrow(/provider must be one of 'searxng', 'brave', 'tavily', 'mcp' or null, got 'bing'/);
    expect(() => createSearchProvider(config({ provider: 'brave', apiKey: 'k', timeoutMs: 0 }))).toThrow('Invalid web search config: timeoutMs must be a positive number, got 0');
  });
});

describe('domainAllowed', () => {
  const table: Array<[string, string[] | undefined, boolean]> = [
    ['https://example.com/a', ['example.com'], true],
    ['https://docs.example.com/a', ['example.com'], true],
    ['https://a.b.example.com/', ['example.com'], true],
    ['https://badexample.com/', ['example.com'], false],
    ['https://example.com.evil.net/', ['example.com'], false],
    ['https://example.org/', ['example.com'], false],
    ['https://EXAMPLE.com/', ['Example.COM'], true],
    ['https://example.com./', ['example.com'], true],
    ['https://example.com/', ['https://example.com/path'], true],
    ['https://docs.example.com/', ['*.example.com'], true],
    ['https://example.com:8443/', ['example.com'], true],
    ['https://example.com/', ['docs.example.com'], false],
    ['https://other.net/', ['example.com', 'other.net'], true],
    ['https://anything.net/', undefined, true],
    ['https://anything.net/', [], true],
    ['not a url', ['example.com'], false],
  ];
  it.each(table)('%s with %j → %s', (url, domains, expected) => {
    expect(domainAllowed(url, domains)).toBe(expected);
  });
});
