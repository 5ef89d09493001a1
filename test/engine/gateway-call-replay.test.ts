import OpenAI from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WEB_SEARCH_SETTINGS } from '../../src/tools/web-search/setup.js';
import { toModelItems } from '../../src/engine/conversation.js';
import { heldHistory } from '../../src/engine/held-history.js';
import { SqliteResponseStore } from '../../src/store/sqlite.js';
import type { WebSearchCallItem } from '../../src/protocol/responses.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { startFakeSearchApis, type FakeSearchApis } from '../helpers/fake-search-apis.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

// issue 9 #2: what the model read from a gateway-executed call (web_search here) is replayed to it
// in later turns exactly as it first saw it — through previous_response_id, a conversation, or
// echoed input — and when the gateway no longer holds it, the model is told so.
describe('gateway-executed calls are replayed to the model in later turns', () => {
  let apis: FakeSearchApis;
  let tg: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    apis = await startFakeSearchApis();
    tg = await startTestGateway({
      config: { webSearch: { ...DEFAULT_WEB_SEARCH_SETTINGS, provider: 'searxng', baseUrl: apis.url, timeoutMs: 2_000, outbound: { allowHosts: [], allowCidrs: ['127.0.0.0/8'], allowHttp: true } } } as any,
    });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(async () => {
    await tg?.close();
    await apis?.close();
  });

  const tools = [{ type: 'web_search' as const }];
  const searchThenAnswer = scripted({ rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'tokio tutorial' } }] }, { text: 'I read it [1].' }] }, 'search tokio');
  const followUp = scripted({ rounds: [{ text: 'from memory' }] }, 'what did you read?');

  /** The tool call and its result as the model saw them in the last upstream request. */
  function lastSeenCall(): { call: any; result: any } {
    const messages = tg.simulator.requests.at(-1)!.body.messages as any[];
    const assistant = messages.find((m) => m.role === 'assistant' && m.tool_calls?.length);
    const result = messages.find((m) => m.role === 'tool');
    return { call: assistant?.tool_calls?.[0], result };
  }

  async function firstTurn(extra: Record<string, unknown> = {}): Promise<{ response: OpenAI.Responses.Response; seen: { call: any; result: any } }> {
    const response = await client.responses.create({ model: 'm', input: searchThenAnswer, tools, ...extra } as any);
    expect(response.output.map((i) => i.type)).toEqual(['web_search_call', 'message']);
    const seen = lastSeenCall();
    expect(seen.result.content).toContain('Search results for "tokio tutorial"');
    return { response, seen };
  }

  it('through previous_response_id', async () => {
    const { response, seen } = await firstTurn();
    await client.responses.create({ model: 'm', previous_response_id: response.id, input: followUp, tools } as any);
    const replayed = lastSeenCall();
    expect(replayed.call).toEqual(seen.call);
    expect(replayed.result).toEqual(seen.result);
  });

  it('through a conversation', async () => {
    const conversation = await client.conversations.create({});
    const { seen } = await firstTurn({ conversation: conversation.id });
    await client.responses.create({ model: 'm', conversation: conversation.id, input: followUp, tools } as any);
    const replayed = lastSeenCall();
    expect(replayed.call).toEqual(seen.call);
    expect(replayed.result).toEqual(seen.result);
  });

  it('through echoed input of a stored response', async () => {
    const { response, seen } = await firstTurn();
    await client.responses.create({ model: 'm', store: false, input: [{ role: 'user', content: searchThenAnswer }, ...response.output, { role: 'user', content: followUp }], tools } as any);
    const replayed = lastSeenCall();
    expect(replayed.call).toEqual(seen.call);
    expect(replayed.result).toEqual(seen.result);
  });

  it('echoed from a store: false response: the model is shown the call and its result as it first saw them (held in memory)', async () => {
    const { response, seen } = await firstTurn({ store: false });
    await client.responses.create({ model: 'm', store: false, input: [{ role: 'user', content: searchThenAnswer }, ...response.output, { role: 'user', content: followUp }], tools } as any);
    const replayed = lastSeenCall();
    expect(replayed.call).toEqual(seen.call);
    expect(replayed.result).toEqual(seen.result);
  });

  it('over a WebSocket, a store: false continuation from the connection cache replays it too', async () => {
    const ws = new WebSocket(`${tg.gateway.url.replace('http', 'ws')}/v1/responses`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const turn = (body: Record<string, unknown>) =>
      new Promise<any>((resolve, reject) => {
        const onMessage = (data: WebSocket.RawData) => {
          const event = JSON.parse(String(data));
          if (event.type === 'error' || event.type === 'response.failed') reject(new Error(JSON.stringify(event)));
          if (event.type === 'response.completed') {
            ws.off('message', onMessage);
            resolve(event.response);
          }
        };
        ws.on('message', onMessage);
        ws.send(JSON.stringify({ type: 'response.create', model: 'm', store: false, tools, ...body }));
      });
    try {
      const first = await turn({ input: searchThenAnswer });
      expect(first.output.map((i: any) => i.type)).toEqual(['web_search_call', 'message']);
      const seen = lastSeenCall();
      await turn({ previous_response_id: first.id, input: followUp });
      const replayed = lastSeenCall();
      expect(replayed.call).toEqual(seen.call);
      expect(replayed.result).toEqual(seen.result);
    } finally {
      ws.close();
    }
  });

  it('a long conversation of searches keeps its history held: what the model is shown is made once per turn, and is what the whole chain converts to', async () => {
    let previous: string | undefined;
    const seen: Array<{ call: any; result: any }> = [];
    for (let turn = 0; turn < 4; turn++) {
      const response = await client.responses.create({ model: 'm', input: searchThenAnswer, tools, ...(previous ? { previous_response_id: previous } : {}) } as any);
      expect(response.output.map((i) => i.type)).toEqual(['web_search_call', 'message']);
      // this turn's call and result: the last of them in its upstream request
      const messages = tg.simulator.requests.at(-1)!.body.messages as any[];
      seen.push({ call: messages.findLast((m) => m.role === 'assistant' && m.tool_calls?.length).tool_calls[0], result: messages.findLast((m) => m.role === 'tool') });
      previous = response.id;
    }
    // the next turn shows the model every search as it first saw it, in order
    await client.responses.create({ model: 'm', previous_response_id: previous, input: followUp, tools } as any);
    const messages = tg.simulator.requests.at(-1)!.body.messages as any[];
    expect(messages.filter((m) => m.role === 'assistant' && m.tool_calls?.length).map((m) => m.tool_calls[0])).toEqual(seen.map((s) => s.call));
    expect(messages.filter((m) => m.role === 'tool')).toEqual(seen.map((s) => s.result));
    // a replica's first read of the chain (another store on the same database) holds its model
    // items too — the records of its calls come with it — equal to converting the whole chain
    const replica = new SqliteResponseStore(tg.dataDir);
    try {
      const chain = (await replica.chain(previous!))!;
      const held = heldHistory(chain);
      expect(held.model).toBeDefined();
      const callIds = held.items.filter((item) => item.type === 'web_search_call').map((item) => item.id);
      expect(callIds).toHaveLength(4);
      const records = new Map((await replica.callRecords(callIds)).map((record) => [record.itemId, record]));
      expect(held.model!.items).toEqual(toModelItems(held.items, new ToolRegistry(), records));
    } finally {
      await replica.close();
    }
  });

  it('deleting the response deletes what the model saw with it', async () => {
    const { response } = await firstTurn();
    await client.responses.delete(response.id);
    await client.responses.create({ model: 'm', store: false, input: [{ role: 'user', content: searchThenAnswer }, ...response.output, { role: 'user', content: followUp }], tools } as any);
    expect(lastSeenCall().result.content).toMatch(/no longer available/);
  });
});

describe('replayed gateway calls keep their rounds', () => {
  const call = (id: string): WebSearchCallItem => ({ type: 'web_search_call', id, status: 'completed', action: { type: 'search', query: id } });
  const record = (id: string, round: string) => ({ itemId: id, callId: `call_${id}`, name: 'web_search', arguments: `{"query":"${id}"}`, output: `results ${id}`, round });
  const shape = (items: Array<{ type: string; callId?: string }>) => items.map((i) => `${i.type === 'function_call' ? 'call' : 'out'}:${i.callId}`);

  it('calls of one round replay as one assistant turn, then their results', () => {
    const records = new Map([record('a', 'r1'), record('b', 'r1')].map((r) => [r.itemId, r]));
    expect(shape(toModelItems([call('a'), call('b')], new ToolRegistry(), records) as any)).toEqual(['call:call_a', 'call:call_b', 'out:call_a', 'out:call_b']);
  });

  it('calls of successive rounds each come with their own result (a round the model did not make is never invented)', () => {
    const records = new Map([record('a', 'r1'), record('b', 'r2')].map((r) => [r.itemId, r]));
    expect(shape(toModelItems([call('a'), call('b')], new ToolRegistry(), records) as any)).toEqual(['call:call_a', 'out:call_a', 'call:call_b', 'out:call_b']);
    // without records (history echoed from a turn that was not stored) nothing says they were one round
    expect(shape(toModelItems([call('a'), call('b')], new ToolRegistry()) as any)).toEqual(['call:a', 'out:a', 'call:b', 'out:b']);
  });
});
