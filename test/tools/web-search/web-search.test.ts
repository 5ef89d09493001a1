import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEB_SEARCH_SETTINGS, type WebSearchSettings } from '../../../src/tools/web-search/setup.js';
import { startFakeSearchApis, type FakeSearchApis } from '../../helpers/fake-search-apis.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { checkStreamInvariants } from '../../helpers/spec.js';

const fixture = (path: string) => JSON.parse(readFileSync(new URL(`../../fixtures/codex/${path}`, import.meta.url), 'utf8'));

const PAGE = `<!doctype html><html><head><title>Ferris facts</title><style>body{}</style></head>
<body><h1>Ferris</h1><p>Ferris is the unofficial mascot of Rust &amp; a crab.</p><script>evil()</script>
<ul><li>Orange</li><li>Friendly</li></ul></body></html>`;

describe('web_search executed by the gateway', () => {
  let apis: FakeSearchApis;
  let pages: Server;
  let pagesUrl: string;
  let tg: TestGateway;
  let client: OpenAI;
  let guarded: TestGateway;

  beforeAll(async () => {
    apis = await startFakeSearchApis();
    pages = createServer((req, res) => {
      if (req.url === '/ferris') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(PAGE);
      } else if (req.url === '/to-private') {
        res.writeHead(302, { location: 'http://10.0.0.1/secret' });
        res.end();
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    pagesUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    const webSearch = (outbound: WebSearchSettings['outbound']): WebSearchSettings => ({ ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: apis.url, timeoutMs: 2_000, outbound });
    tg = await startTestGateway({ config: { webSearch: webSearch({ allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true }) } as any });
    guarded = await startTestGateway({ simulator: tg.simulator, config: { webSearch: webSearch({ allowHosts: [], allowCidrs: [], allowHttp: true }) } as any });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await guarded.close();
    await tg.close();
    await apis.close();
    await new Promise<void>((resolve) => pages.close(() => resolve()));
  });

  it('streams a search, returns the web_search_call with sources, and annotates citations', async () => {
    apis.reset();
    const answer = 'Tokio is an asynchronous runtime [1]. The async book goes deeper [2].';
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio tutorial' } }] }, { text: answer, chunks: 9 }] };
    const raw = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }], include: ['web_search_call.action.sources'], stream: true }),
    });
    const events = await readSse(raw);
    expect(checkStreamInvariants(events as any)).toEqual([]);
    const types = events.map((e) => e.type);
    const wsAdded = types.indexOf('response.output_item.added');
    expect(types.slice(wsAdded, wsAdded + 5)).toEqual([
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ]);
    const final = events.at(-1)!.response;
    expect(final.status).toBe('completed');
    const [call, message] = final.output;
    expect(call).toMatchObject({ type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'tokio tutorial' } });
    expect(call.id).toMatch(/^ws_/);
    expect(call.action.sources[0]).toEqual({ type: 'url', url: 'https://tokio.rs/tokio/tutorial' });

    // the provider was asked in its documented wire format
    const searx = apis.requests.find((r) => r.api === 'searxng')!;
    expect(searx.query).toMatchObject({ q: 'tokio tutorial', format: 'json' });

    // the model saw numbered sources and the answer's [n] markers became url_citation annotations
    const toolMessage = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(toolMessage.content).toContain('[1] Tutorial | Tokio - An asynchronous Rust runtime\nURL: https://tokio.rs/tokio/tutorial');
    const part = message.content[0];
    expect(part.text).toBe(answer);
    expect(part.annotations).toHaveLength(2);
    for (const annotation of part.annotations) {
      expect(part.text.slice(annotation.start_index, annotation.end_index)).toMatch(/^\[\d\]$/);
    }
    expect(part.annotations[0]).toEqual({ type: 'url_citation', url: 'https://tokio.rs/tokio/tutorial', title: 'Tutorial | Tokio - An asynchronous Rust runtime', start_index: answer.indexOf('[1]'), end_index: answer.indexOf('[1]') + 3 });
    expect(part.annotations[1].url).toBe('https://rust-lang.github.io/async-book/');
    const added = events.filter((e) => e.type === 'response.output_text.annotation.added');
    expect(added.map((e) => e.annotation_index)).toEqual([0, 1]);
    expect(added.every((e) => e.item_id === message.id)).toBe(true);

    // the SDK's accumulator agrees
    const sdkFinal = await client.responses.stream({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }], include: ['web_search_call.action.sources'] }).finalResponse();
    expect((sdkFinal.output[1] as any).content[0].annotations).toEqual(part.annotations);
  });

  it('without include, sources are not in the action', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio' } }] }, { text: 'ok' }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }] });
    expect((response.output[0] as any).action.sources).toBeUndefined();
  });

  it('allowed_domains filters results and page opens', async () => {
    apis.reset();
    const script = {
      rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio' } }, { name: 'open_page', arguments: { url: 'https://tokio.rs/tokio/tutorial' } }] }, { text: 'done' }],
    };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [{ type: 'web_search', filters: { allowed_domains: ['docs.rs'] } } as any] });
    expect(apis.requests[0].query.q).toContain('site:docs.rs');
    const tools = tg.simulator.requests.at(-1)!.body.messages.filter((m: any) => m.role === 'tool');
    const urls = [...tools[0].content.matchAll(/URL: (\S+)/g)].map((m) => m[1]);
    expect(urls.length).toBeGreaterThan(0);
    expect(urls.every((u) => new URL(u).hostname.endsWith('docs.rs'))).toBe(true);
    expect(tools[1].content).toMatch(/outside the allowed domains/);
    expect(response.output.map((i: any) => i.status)).toEqual(['completed', 'failed', 'completed']);
  });

  it('a provider 429 becomes an error result and a failed call item, not a failed response', async () => {
    apis.reset();
    apis.failNext(429, { retryAfter: '7' });
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'rate limited' } }] }, { text: 'I could not search.' }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }] });
    expect(response.status).toBe('completed');
    expect(response.output[0]).toMatchObject({ type: 'web_search_call', status: 'failed' });
    const tool = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(tool.content).toMatch(/rate limiting requests \(retry after 7 s\)/);
  });

  it('open_page and find_in_page read local pages as text, with a citation number', async () => {
    const url = `${pagesUrl}/ferris`;
    const script = {
      rounds: [{ tool_calls: [{ name: 'open_page', arguments: { url } }, { name: 'find_in_page', arguments: { url, pattern: 'mascot' } }] }, { text: 'Ferris is a crab [1].' }],
    };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }] });
    expect(response.output.slice(0, 2).map((i: any) => i.action)).toEqual([
      { type: 'open_page', url },
      { type: 'find_in_page', url, pattern: 'mascot' },
    ]);
    const tools = tg.simulator.requests.at(-1)!.body.messages.filter((m: any) => m.role === 'tool');
    expect(tools[0].content).toContain('[1] Ferris facts');
    expect(tools[0].content).toContain('Ferris is the unofficial mascot of Rust & a crab.');
    expect(tools[0].content).not.toContain('evil()');
    expect(tools[1].content).toMatch(/1 match\(es\) for "mascot"/);
    const annotations = (response.output[2] as any).content[0].annotations;
    expect(annotations).toEqual([{ type: 'url_citation', url, title: 'Ferris facts', start_index: 17, end_index: 20 }]);
  });

  it('pages on private addresses are refused by the outbound guard, also via redirects', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'open_page', arguments: { url: `${pagesUrl}/ferris` } }] }, { text: 'blocked' }] };
    const guardedClient = new OpenAI({ baseURL: guarded.baseURL, apiKey: 'test', maxRetries: 0 });
    const response = await guardedClient.responses.create({ model: 'm', input: scripted(script), tools: [{ type: 'web_search' }] });
    expect(response.output[0]).toMatchObject({ status: 'failed' });
    const tool = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(tool.content).toMatch(/loopback/);

    const redirect = { rounds: [{ tool_calls: [{ name: 'open_page', arguments: { url: `${pagesUrl}/to-private` } }] }, { text: 'blocked' }] };
    const viaRedirect = await client.responses.create({ model: 'm', input: scripted(redirect), tools: [{ type: 'web_search' }] });
    expect(viaRedirect.output[0]).toMatchObject({ status: 'failed' });
    const tool2 = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(tool2.content).toMatch(/10\.0\.0\.1/);
  });

  it('external_web_access: false answers only from the cache of earlier results', async () => {
    const first = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'cached query' } }] }, { text: 'ok' }] };
    await client.responses.create({ model: 'm', input: scripted(first), tools: [{ type: 'web_search' }] });
    apis.reset();
    const offline = { type: 'web_search', external_web_access: false } as any;
    const again = await client.responses.create({ model: 'm', input: scripted(first), tools: [offline] });
    expect(again.output[0]).toMatchObject({ status: 'completed' });
    expect(apis.requests).toHaveLength(0);
    const fresh = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'never searched' } }] }, { text: 'ok' }] };
    const miss = await client.responses.create({ model: 'm', input: scripted(fresh), tools: [offline] });
    expect(miss.output[0]).toMatchObject({ status: 'failed' });
    expect(apis.requests).toHaveLength(0);
  });

  it('a Codex-shaped request (which declares web_search) gets its searches executed by the gateway', async () => {
    const body = fixture('fallback-tool/0001-request.json');
    const lastUser = [...body.input].reverse().find((i: any) => i.type === 'message' && i.role === 'user');
    lastUser.content.push({ type: 'input_text', text: `#sim ${JSON.stringify({ rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio' } }] }, { text: 'Found it [1].' }] })}` });
    const events = await readSse(await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    const final = events.at(-1)!;
    expect(final.type).toBe('response.completed');
    expect(final.response.output.map((i: any) => i.type)).toEqual(['web_search_call', 'message']);
    expect(final.response.output[1].content[0].annotations[0].url).toBe('https://tokio.rs/tokio/tutorial');
    const sentTools = tg.simulator.requests.at(-1)!.body.tools.map((t: any) => t.function.name);
    expect(sentTools).toEqual(expect.arrayContaining(['web_search', 'open_page', 'find_in_page', 'exec_command', 'multi_agent_v1__spawn_agent']));
  });
});
