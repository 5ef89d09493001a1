import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MCP_CONFIG } from '../../src/mcp/service.js';
import { DEFAULT_WEB_SEARCH_SETTINGS } from '../../src/tools/web-search/setup.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startFaultServer, type FaultServer } from '../helpers/mcp-servers.js';

// issue 9 #3: a call is routed only to what the model was offered this round; anything else is an
// unknown tool answered to the model — never executed, never returned to the client.
describe('routing checks what the model was offered', () => {
  let apis: FakeSearchApis;
  let fault: FaultServer;
  let tg: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    apis = await startFakeSearchApis();
    fault = await startFaultServer();
    tg = await startTestGateway({
      config: {
        webSearch: { ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: apis.url, timeoutMs: 2_000, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } },
        mcp: { ...DEFAULT_MCP_CONFIG, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } },
      } as any,
    });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await fault?.close();
    await apis?.close();
  });

  const lookup = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } } as const;
  /** The tool results the model was sent in the last upstream request. */
  const lastToolResults = (): string[] => tg.simulator.requests.at(-1)!.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content));

  it('a call outside tool_choice.allowed_tools is neither executed (web_search, MCP) nor returned (function)', async () => {
    apis.reset();
    fault.resetStats();
    const script = {
      rounds: [
        {
          tool_calls: [
            { name: 'web_search', arguments: { query: 'secret plans' } },
            { name: 'mcp__f__echo', arguments: { message: 'should not run' } },
            { name: 'other', arguments: {} },
          ],
        },
        { text: 'corrected' },
      ],
    };
    const response = await client.responses.create({
      model: 'm',
      input: scripted(script),
      tools: [lookup, { type: 'function', name: 'other', parameters: { type: 'object', properties: {} } }, { type: 'web_search' }, { type: 'mcp', server_label: 'f', server_url: fault.url, allowed_tools: ['echo'], require_approval: 'never' }],
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'lookup' }] },
    } as any);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('corrected');
    expect(response.output.map((i) => i.type)).toEqual(['mcp_list_tools', 'message']);
    expect(apis.requests).toHaveLength(0);
    expect(fault.callsTo('echo')).toBe(0);
    const results = lastToolResults();
    expect(results).toHaveLength(3);
    for (const text of results) expect(text).toMatch(/unknown tool/);
    // the upstream was offered only the allowed function
    expect(tg.simulator.requests.at(-1)!.body.tools.map((t: any) => t.function.name)).toEqual(['lookup']);
  });

  it('a call to a defer_loading tool that was never loaded is answered as unknown, not returned (client-executed search)', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'later', arguments: {} }] }, { text: 'ok then' }] };
    const response = await client.responses.create({
      model: 'm',
      input: scripted(script),
      tools: [lookup, { type: 'tool_search', execution: 'client' }, { type: 'function', name: 'later', defer_loading: true, parameters: { type: 'object', properties: {} } }],
    } as any);
    expect(response.output.some((i) => i.type === 'function_call')).toBe(false);
    expect(response.output_text).toBe('ok then');
    expect(lastToolResults()).toEqual([expect.stringMatching(/unknown tool 'later'/)]);
  });

  it('with tool_choice "none" a call is not executed or returned', async () => {
    apis.reset();
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'x' } }, { name: 'lookup', arguments: {} }] }, { text: 'fine' }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [lookup, { type: 'web_search' }], tool_choice: 'none' } as any);
    expect(response.output.map((i) => i.type)).toEqual(['message']);
    expect(apis.requests).toHaveLength(0);
  });
});
