// Gateway-executed tools on the Messages surface, with the official `@anthropic-ai/sdk`: the MCP
// connector against server-everything (a real MCP server from npm), the server web search tool
// against the local search provider (SearXNG's wire format), `pause_turn` at the round cap and its
// continuation, and one gateway serving the same MCP server and search provider to a Responses
// turn and a Messages turn. Every stream passes the invariant checker.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG, type McpConfig } from '../../src/mcp/service.js';
import { DEFAULT_WEB_SEARCH_SETTINGS, type WebSearchSettings } from '../../src/tools/web-search/setup.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { checkMessagesStream } from '../helpers/messages-stream.js';
import { startEverything, type ChildMcpServer } from '../helpers/mcp-servers.js';

const LOOPBACK = { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true };
const MCP: McpConfig = { ...DEFAULT_MCP_CONFIG, outbound: LOOPBACK };
const MCP_BETA = 'mcp-client-2025-11-20';

let ev: ChildMcpServer;
let apis: FakeSearchApis;
let tg: TestGateway;
let client: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  [ev, apis] = await Promise.all([startEverything('streamableHttp'), startFakeSearchApis()]);
  const webSearch: WebSearchSettings = { ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: apis.url, timeoutMs: 5_000, outbound: LOOPBACK };
  // a small round cap, so pause_turn is reachable in a few scripted rounds
  tg = await startTestGateway({ config: { mcp: MCP, webSearch, tools: { maxToolRounds: 2 } } as any });
  client = new Anthropic({ baseURL: tg.gateway.url, apiKey: 'test', maxRetries: 0 });
  openai = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await tg?.close();
  await Promise.allSettled([ev?.close(), apis?.close()]);
});

const upstreamSince = (from: number) => tg.simulator.requests.slice(from).map((r) => r.body as any);
const mcpServers = () => [{ type: 'url' as const, url: ev.url, name: 'ev' }];
const echoToolset = { type: 'mcp_toolset', mcp_server_name: 'ev', default_config: { enabled: false }, configs: { echo: { enabled: true } } };

async function betaStream(params: Record<string, unknown>): Promise<{ final: any; events: any[] }> {
  const events: any[] = [];
  const stream = client.beta.messages.stream(params as any);
  stream.on('streamEvent', (event) => events.push(event));
  const final: any = await stream.finalMessage();
  expect(checkMessagesStream(events)).toEqual([]);
  delete final.parsed_output; // the SDK's own addition, never on the wire
  return { final, events };
}

describe('MCP connector', () => {
  const script = scripted({ rounds: [{ tool_calls: [{ name: 'mcp__ev__echo', arguments: { message: 'hi' } }] }, { text: 'The server said hi back.' }] });

  it('mcp_servers + mcp_toolset: mcp_tool_use and mcp_tool_result blocks, then the answer (blocking and streamed alike)', async () => {
    const params = { model: 'm', max_tokens: 200, betas: [MCP_BETA], mcp_servers: mcpServers(), tools: [echoToolset], messages: [{ role: 'user', content: script }] };
    const from = tg.simulator.requests.length;
    const blocking: any = await client.beta.messages.create(params as any);
    expect(blocking.stop_reason).toBe('end_turn');
    expect(blocking.content).toEqual([
      { type: 'mcp_tool_use', id: expect.stringMatching(/^mcptoolu_/), name: 'echo', server_name: 'ev', input: { message: 'hi' } },
      { type: 'mcp_tool_result', tool_use_id: blocking.content[0].id, is_error: false, content: [{ type: 'text', text: 'Echo: hi', citations: null }] },
      { type: 'text', text: 'The server said hi back.', citations: null },
    ]);
    // the toolset's selection reached the model: only echo, under its MCP model name
    const [first, second] = upstreamSince(from);
    expect(first.tools.map((t: any) => t.function.name)).toEqual(['mcp__ev__echo']);
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Echo: hi' });

    const { final } = await betaStream(params);
    expect(final).toEqual({ ...blocking, id: expect.stringMatching(/^msg_/), content: blocking.content.map((b: any) => (b.id || b.tool_use_id ? { ...b, ...(b.id ? { id: expect.stringMatching(/^mcptoolu_/) } : { tool_use_id: expect.stringMatching(/^mcptoolu_/) }) } : b)) });
  });

  it('a round with a client call and an MCP call: the MCP call runs, the message stops for the client (tool_use)', async () => {
    const weather = { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };
    const mixed = scripted({ rounds: [{ tool_calls: [{ id: 'w1', name: 'get_weather', arguments: { city: 'Oslo' } }, { name: 'mcp__ev__echo', arguments: { message: 'mixed' } }] }, { text: 'Both done.' }] });
    const params = { model: 'm', max_tokens: 200, betas: [MCP_BETA], mcp_servers: mcpServers(), tools: [echoToolset, weather], messages: [{ role: 'user', content: mixed }] };
    const { final } = await betaStream(params);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content.map((b: any) => b.type)).toEqual(['tool_use', 'mcp_tool_use', 'mcp_tool_result']);
    expect(final.content[2].content[0].text).toBe('Echo: mixed');
    const from = tg.simulator.requests.length;
    const answer: any = await client.beta.messages.create({
      ...params,
      messages: [...params.messages, { role: 'assistant', content: final.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_w1', content: 'cold' }] }],
    } as any);
    expect(answer.content).toEqual([{ type: 'text', text: 'Both done.', citations: null }]);
    // the model saw both results, each paired with its own call
    const tools = upstreamSince(from)[0].messages.filter((m: any) => m.role === 'tool');
    expect(tools.map((m: any) => m.content).sort()).toEqual(['Echo: mixed', 'cold']);
  });

  it('the older tool_configuration.allowed_tools and authorization_token are accepted', async () => {
    const from = tg.simulator.requests.length;
    const message: any = await client.beta.messages.create({
      model: 'm',
      max_tokens: 200,
      betas: ['mcp-client-2025-04-04'],
      mcp_servers: [{ type: 'url', url: ev.url, name: 'ev', authorization_token: 'secret-token', tool_configuration: { enabled: true, allowed_tools: ['echo', 'get-sum'] } }],
      messages: [{ role: 'user', content: script }],
    } as any);
    expect(message.content.map((b: any) => b.type)).toEqual(['mcp_tool_use', 'mcp_tool_result', 'text']);
    expect(upstreamSince(from)[0].tools.map((t: any) => t.function.name).sort()).toEqual(['mcp__ev__echo', 'mcp__ev__get-sum']);
  });

  it('an MCP server that cannot be reached is an Anthropic-shaped error before anything streams', async () => {
    const err = await client.beta.messages
      .create({ model: 'm', max_tokens: 50, betas: [MCP_BETA], mcp_servers: [{ type: 'url', url: 'http://127.0.0.1:1/mcp', name: 'down' }], messages: [{ role: 'user', content: 'hi' }] } as any)
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.error).toMatchObject({ type: 'error', error: { message: expect.stringMatching(/down/) } });
  });
});

describe('web search', () => {
  const answer = 'Tokio is an asynchronous runtime [1]. The async book goes deeper [2].';
  const script = scripted({ rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio tutorial' } }] }, { text: answer, chunks: 9 }] });
  const params = { model: 'm', max_tokens: 300, tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 5 }], messages: [{ role: 'user' as const, content: script }] };

  it('server_tool_use + web_search_tool_result blocks, web_search_result_location citations on the text', async () => {
    apis.reset();
    const message = await client.messages.create(params);
    expect(message.stop_reason).toBe('end_turn');
    const [use, result, text, ...rest] = message.content as any[];
    expect(rest).toEqual([]);
    expect(use).toEqual({ type: 'server_tool_use', id: expect.stringMatching(/^srvtoolu_/), name: 'web_search', input: { query: 'tokio tutorial' }, caller: { type: 'direct' } });
    expect(result.type).toBe('web_search_tool_result');
    expect(result.tool_use_id).toBe(use.id);
    expect(result.content.map((r: any) => r.url).slice(0, 2)).toEqual(['https://tokio.rs/tokio/tutorial', 'https://rust-lang.github.io/async-book/']);
    expect(result.content[0]).toEqual({ type: 'web_search_result', url: 'https://tokio.rs/tokio/tutorial', title: 'Tutorial | Tokio - An asynchronous Rust runtime', encrypted_content: expect.any(String), page_age: null });
    expect(result.content[1]).toMatchObject({ title: 'Asynchronous Programming in Rust', page_age: expect.stringMatching(/^2024-03-18/) });
    expect(text.text).toBe(answer);
    expect(text.citations).toEqual([
      { type: 'web_search_result_location', url: 'https://tokio.rs/tokio/tutorial', title: 'Tutorial | Tokio - An asynchronous Rust runtime', encrypted_index: expect.any(String), cited_text: 'Tokio is an asynchronous runtime' },
      { type: 'web_search_result_location', url: 'https://rust-lang.github.io/async-book/', title: 'Asynchronous Programming in Rust', encrypted_index: expect.any(String), cited_text: 'The async book goes deeper' },
    ]);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    // the provider was really asked, in its wire format
    expect(apis.requests.filter((r) => r.api === 'searxng').map((r) => r.query.q)).toEqual(['tokio tutorial']);
  });

  it('streamed: citations_delta on the text block; finalMessage() equals the blocking result', async () => {
    const blocking = await client.messages.create(params);
    const events: any[] = [];
    const stream = client.messages.stream(params);
    stream.on('streamEvent', (e) => events.push(e));
    const final: any = await stream.finalMessage();
    delete final.parsed_output;
    expect(checkMessagesStream(events)).toEqual([]);
    const withoutIds = (m: any) => JSON.parse(JSON.stringify(m).replace(/"(msg|srvtoolu)_[0-9a-f]+"/g, '"$1_X"'));
    expect(withoutIds(final)).toEqual(withoutIds(blocking));
    expect(events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'citations_delta')).toHaveLength(2);
    // the result block arrives whole: start immediately followed by stop
    const resultStart = events.findIndex((e) => e.type === 'content_block_start' && e.content_block.type === 'web_search_tool_result');
    expect(events[resultStart + 1]).toEqual({ type: 'content_block_stop', index: events[resultStart].index });
  });

  it('allowed_domains reaches the provider; blocked_domains keeps those sites out of the results', async () => {
    apis.reset();
    const message = await client.messages.create({ ...params, tools: [{ type: 'web_search_20250305', name: 'web_search', allowed_domains: ['docs.rs'], user_location: { type: 'approximate', country: 'NO', city: 'Oslo' } }] });
    const result = message.content.find((b) => b.type === 'web_search_tool_result') as any;
    expect(result.content.length).toBeGreaterThan(0);
    for (const r of result.content) expect(new URL(r.url).hostname).toBe('docs.rs');
    const open = await client.messages.create(params);
    const openResult = open.content.find((b) => b.type === 'web_search_tool_result') as any;
    const blockedHost = new URL(openResult.content[0].url).hostname;
    const blocked = await client.messages.create({ ...params, tools: [{ type: 'web_search_20250305', name: 'web_search', blocked_domains: [blockedHost] }] });
    expect(blocked.stop_reason).toBe('end_turn');
    const hosts = ((blocked.content.find((b) => b.type === 'web_search_tool_result') as any).content as any[]).map((r) => new URL(r.url).hostname);
    expect(hosts.length).toBeGreaterThan(0);
    expect(hosts).not.toContain(blockedHost);
    const err = await client.messages.create({ ...params, tools: [{ type: 'web_search_20250305', name: 'web_search', blocked_domains: 'x' as never }] }).catch((e) => e);
    expect(err.status).toBe(400);
  });
});

describe('pause_turn at the round cap', () => {
  // three MCP rounds, then the answer: more than the gateway's cap of two rounds per request
  const calls = [1, 2, 3].map((n) => ({ tool_calls: [{ name: 'mcp__ev__echo', arguments: { message: `round ${n}` } }] }));
  const script = scripted({ rounds: [...calls, { text: 'All three echoes are back.' }] });
  const base = () => ({ model: 'm', max_tokens: 200, betas: [MCP_BETA], mcp_servers: mcpServers(), tools: [echoToolset] });

  it('ends with stop_reason pause_turn; sending the conversation back continues it to end_turn', async () => {
    const { final: paused } = await betaStream({ ...base(), messages: [{ role: 'user', content: script }] });
    expect(paused.stop_reason).toBe('pause_turn');
    expect(paused.content.map((b: any) => b.type)).toEqual(['mcp_tool_use', 'mcp_tool_result', 'mcp_tool_use', 'mcp_tool_result']);
    expect(paused.content.filter((b: any) => b.type === 'mcp_tool_use').map((b: any) => b.input.message)).toEqual(['round 1', 'round 2']);

    const from = tg.simulator.requests.length;
    const resumed: any = await client.beta.messages.create({ ...base(), messages: [{ role: 'user', content: script }, { role: 'assistant', content: paused.content }] } as any);
    expect(resumed.stop_reason).toBe('end_turn');
    expect(resumed.content.map((b: any) => b.type)).toEqual(['mcp_tool_use', 'mcp_tool_result', 'text']);
    expect(resumed.content[0].input).toEqual({ message: 'round 3' });
    expect(resumed.content[2].text).toBe('All three echoes are back.');
    // the model saw the earlier rounds' calls and results, paired, before its third call
    const tools = upstreamSince(from)[0].messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
    expect(tools).toEqual(['Echo: round 1', 'Echo: round 2']);
  });
});

describe('one tool framework, two surfaces', () => {
  it('the same MCP server and search provider serve a Responses turn and a Messages turn in one gateway', async () => {
    apis.reset();
    const script = scripted({
      rounds: [{ tool_calls: [{ name: 'mcp__ev__echo', arguments: { message: 'both' } }, { name: 'web_search', arguments: { query: 'rust async on both surfaces' } }] }, { text: 'Done [1].' }],
    });
    const viaResponses = await openai.responses.create({
      model: 'm',
      input: script,
      include: ['web_search_call.action.sources', 'web_search_call.results'],
      tools: [{ type: 'mcp', server_label: 'ev', server_url: ev.url, allowed_tools: ['echo'], require_approval: 'never' }, { type: 'web_search' }],
    });
    const viaMessages: any = await client.beta.messages.create({
      model: 'm',
      max_tokens: 200,
      betas: [MCP_BETA],
      mcp_servers: mcpServers(),
      tools: [echoToolset, { type: 'web_search_20250305', name: 'web_search' }],
      messages: [{ role: 'user', content: script }],
    } as any);

    const mcpCall: any = viaResponses.output.find((i) => i.type === 'mcp_call');
    const search: any = viaResponses.output.find((i) => i.type === 'web_search_call');
    const mcpResult = viaMessages.content.find((b: any) => b.type === 'mcp_tool_result');
    const searchResult = viaMessages.content.find((b: any) => b.type === 'web_search_tool_result');
    expect(mcpCall.output).toBe('Echo: both');
    expect(mcpResult.content).toEqual([{ type: 'text', text: mcpCall.output, citations: null }]);
    expect(searchResult.content.map((r: any) => r.url)).toEqual(search.action.sources.map((s: any) => s.url));
    expect(searchResult.content.map((r: any) => r.title)).toEqual(search.results.map((r: any) => r.title));
    // both answers cite the same first source, each in its own surface's shape
    const annotation = (viaResponses.output.at(-1) as any).content[0].annotations[0];
    const citation = viaMessages.content.at(-1).citations[0];
    expect(citation.url).toBe(annotation.url);
    expect(citation.title).toBe(annotation.title);
    // one executor behind both surfaces: the Messages turn was answered from the search cache the Responses turn filled
    expect(apis.requests.filter((r) => r.api === 'searxng').map((r) => r.query.q)).toEqual(['rust async on both surfaces']);
  });
});
