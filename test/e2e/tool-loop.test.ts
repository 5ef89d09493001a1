import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingExecution } from '../helpers/executions.js';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const clientTool = { type: 'function', name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } as const;
const webSearch = { type: 'web_search' } as const;

describe('the tool loop with gateway-owned executors (architecture walkthrough)', () => {
  let tg: TestGateway;
  const search = recordingExecution({});
  let client: OpenAI;

  beforeAll(async () => {
    tg = await startTestGateway({ executions: { web_search: search.factory }, config: { tools: { maxToolRounds: 3 }, codeInterpreter: { enabled: false } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('gateway call → loop → client call returned', async () => {
    const script = {
      rounds: [
        { tool_calls: [{ name: 'web_search', arguments: { query: 'oslo weather' } }] },
        { tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] },
      ],
    };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [clientTool, webSearch] as any });
    expect(response.status).toBe('completed');
    expect(response.output.map((i) => i.type)).toEqual(['web_search_call', 'function_call']);
    const call = response.output[1] as any;
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Oslo' });
    // the gateway fed the search result back as a tool message before the second round
    const second = tg.simulator.requests.at(-1)!.body;
    const toolMessage = second.messages.find((m: any) => m.role === 'tool');
    expect(toolMessage.content).toBe('results for oslo weather');
    const assistant = second.messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls[0].function.name).toBe('web_search');
    expect(assistant.tool_calls[0].id).toBe(toolMessage.tool_call_id);
  });

  it('a mixed round returns in one round: gateway calls run, client calls come back', async () => {
    const before = tg.simulator.requests.length;
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'a' } }, { name: 'get_weather', arguments: { city: 'Bergen' } }] }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [clientTool, webSearch] as any });
    expect(tg.simulator.requests.length - before).toBe(1);
    expect(response.status).toBe('completed');
    const types = response.output.map((i) => i.type).sort();
    expect(types).toEqual(['function_call', 'web_search_call']);
    const ws = response.output.find((i) => i.type === 'web_search_call') as any;
    expect(ws.status).toBe('completed');
  });

  it('the round cap yields status incomplete, not an HTTP error', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'again' } }] }], repeat_last: true };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [webSearch] as any });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_tool_rounds' });
    expect(response.output.filter((i) => i.type === 'web_search_call')).toHaveLength(3);
  });

  it('max_tool_calls caps gateway calls with incomplete', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: '1' } }, { name: 'web_search', arguments: { query: '2' } }, { name: 'web_search', arguments: { query: '3' } }] }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [webSearch] as any, max_tool_calls: 2 } as any);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_tool_calls' });
    expect(response.output.filter((i) => i.type === 'web_search_call')).toHaveLength(2);
  });

  it('an unknown model call reaches the model as an error tool result and the loop continues', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'no_such_tool', arguments: {} }] }, { text: 'sorry' }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [clientTool] as any });
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('sorry');
    const second = tg.simulator.requests.at(-1)!.body;
    const toolMessage = second.messages.find((m: any) => m.role === 'tool');
    expect(toolMessage.content).toMatch(/unknown tool 'no_such_tool'/);
  });

  it('invalid JSON arguments for a gateway tool become an error tool result', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: '{"query": oops' }] }, { text: 'fixed' }] };
    const response = await client.responses.create({ model: 'm', input: scripted(script), tools: [webSearch] as any });
    expect(response.output_text).toBe('fixed');
    const ws = response.output.find((i) => i.type === 'web_search_call') as any;
    expect(ws.status).toBe('failed');
    const toolMessage = tg.simulator.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
    expect(toolMessage.content).toMatch(/not a valid JSON object/);
  });

  it('text that merely looks like a tool call is text', async () => {
    const text = '{"name": "web_search", "arguments": {"query": "x"}}';
    const response = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text }] }), tools: [webSearch] as any });
    expect(response.output.map((i) => i.type)).toEqual(['message']);
    expect(response.output_text).toBe(text);
  });

  it('gateway calls never appear as function_call in the stream; the SDK accumulator accepts the stream', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'web_search', arguments: { query: 'q' } }] }, { text: 'done' }] };
    const raw = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: scripted(script), tools: [webSearch], stream: true }),
    });
    const events = await readSse(raw);
    expect(events.some((e) => e.type.startsWith('response.function_call'))).toBe(false);
    expect(events.some((e) => e.item?.type === 'function_call')).toBe(false);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['response.web_search_call.in_progress', 'response.web_search_call.searching', 'response.web_search_call.completed']));
    events.forEach((e, i) => expect(e.sequence_number).toBe(i));
    expect(events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete'].includes(e.type))).toHaveLength(1);

    const stream = client.responses.stream({ model: 'm', input: scripted(script), tools: [webSearch] as any });
    const final = await stream.finalResponse();
    expect(final.output.map((i) => i.type)).toEqual(['web_search_call', 'message']);
    expect(final.output_text).toBe('done');
  });

  // code_interpreter is off unless the operator enables it (config codeInterpreter.enabled)
  it('a gateway type with no executor configured is omitted from the model and the request succeeds', async () => {
    const response = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'ok' }] }), tools: [{ type: 'code_interpreter', container: { type: 'auto' } }, clientTool] as any });
    expect(response.status).toBe('completed');
    const sent = tg.simulator.requests.at(-1)!.body;
    expect(sent.tools.map((t: any) => t.function.name)).toEqual(['get_weather']);
    expect((response.tools as any[]).map((t) => t.type)).toEqual(['code_interpreter', 'function']);
  });

  it('unknown tool types are echoed and ignored, never a 400', async () => {
    const response = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'ok' }] }), tools: [{ type: 'hologram_projector', power: 9 }, clientTool] as any });
    expect(response.status).toBe('completed');
    expect(response.tools[0]).toEqual({ type: 'hologram_projector', power: 9 });
    expect(tg.simulator.requests.at(-1)!.body.tools).toHaveLength(1);
  });
});
