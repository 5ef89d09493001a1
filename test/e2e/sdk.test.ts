// The official `openai` SDK against the gateway in front of the simulator: what a real client
// sees, including the SDK's own stream accumulator (which throws on any stream shape it does not
// expect) and its pagination.
import OpenAI, { NotFoundError } from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let tg: TestGateway;
let client: OpenAI;

beforeAll(async () => {
  tg = await startTestGateway();
  client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
});

afterAll(async () => {
  await tg.close();
});

const MODEL = 'sdk-model';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const ROUND_TRIP = { rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is sunny in Oslo.' }] };

/** Chat messages of upstream requests sent since `from` (an index into simulator.requests). */
function upstreamMessagesSince(from: number): any[][] {
  return tg.simulator.requests.slice(from).map((r) => r.body.messages);
}

/** Fields the SDK's stream helper adds on top of the wire Response (ResponsesParser). */
function withoutSdkParsing(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSdkParsing);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === 'output_parsed' || key === 'parsed' || key === 'parsed_arguments') continue;
    out[key] = withoutSdkParsing(v);
  }
  return out;
}

/** The tool round trip's second upstream request: assistant tool_calls, then the tool result. */
function expectToolRoundTrip(messages: any[], callId: string, output: string): void {
  const assistantAt = messages.findIndex((m) => m.role === 'assistant' && Array.isArray(m.tool_calls));
  expect(assistantAt).toBeGreaterThan(-1);
  expect(messages[assistantAt].tool_calls).toEqual([{ id: callId, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]);
  expect(messages[assistantAt + 1]).toEqual({ role: 'tool', tool_call_id: callId, content: output });
  expect(messages.slice(assistantAt + 2)).toEqual([]);
  expect(messages.filter((m) => m.role === 'user')).toHaveLength(1);
}

describe('openai SDK', () => {
  it('responses.create (blocking) gives output_text', async () => {
    const response = await client.responses.create({ model: MODEL, input: scripted({ rounds: [{ text: 'Hello from the gateway.' }] }) });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.model).toBe(MODEL);
    expect(response.output_text).toBe('Hello from the gateway.');
  });

  it('responses.stream() → finalResponse() equals responses.retrieve(id)', async () => {
    const stream = client.responses.stream({ model: MODEL, input: scripted({ rounds: [{ text: 'Streamed through the SDK helper.', chunks: 4 }] }) });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas.join('')).toBe('Streamed through the SDK helper.');
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('Streamed through the SDK helper.');
    const retrieved = await client.responses.retrieve(final.id);
    expect(withoutSdkParsing(final)).toEqual(withoutSdkParsing(retrieved));
  });

  it('client function round trip with previous_response_id + function_call_output', async () => {
    const first = await client.responses.create({ model: MODEL, input: scripted(ROUND_TRIP, 'weather in Oslo?'), tools: [WEATHER_TOOL] });
    expect(first.status).toBe('completed');
    expect(first.output).toHaveLength(1);
    const call = first.output[0];
    if (call.type !== 'function_call') throw new Error(`expected a function_call, got ${call.type}`);
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' });
    expect(call.id).toMatch(/^fc_/);
    expect(call.call_id).toBeTruthy();

    const before = tg.simulator.requests.length;
    const second = await client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":21,"sky":"clear"}' }],
      tools: [WEATHER_TOOL],
    });
    expect(second.status).toBe('completed');
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toBe('It is sunny in Oslo.');
    const sent = upstreamMessagesSince(before);
    expect(sent).toHaveLength(1);
    expectToolRoundTrip(sent[0], call.call_id, '{"temp_c":21,"sky":"clear"}');
  });

  it('the same round trip stateless: store:false, full history echoed in input', async () => {
    const userTurn: ResponseInputItem = { role: 'user', content: scripted(ROUND_TRIP, 'weather in Oslo?') };
    const first = await client.responses.create({ model: MODEL, store: false, input: [userTurn], tools: [WEATHER_TOOL] });
    expect(first.status).toBe('completed');
    const call = first.output[0];
    if (call.type !== 'function_call') throw new Error(`expected a function_call, got ${call.type}`);

    const before = tg.simulator.requests.length;
    const second = await client.responses.create({
      model: MODEL,
      store: false,
      input: [userTurn, ...(first.output as ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
      tools: [WEATHER_TOOL],
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toBe('It is sunny in Oslo.');
    const sent = upstreamMessagesSince(before);
    expect(sent).toHaveLength(1);
    expectToolRoundTrip(sent[0], call.call_id, 'sunny, 21 C');
  });

  it('previous_response_id survives a gateway restart', async () => {
    // Its own gateway (sharing the simulator) and a client without keep-alive: a restart drops
    // open connections, and a pooled socket the client has not yet seen closed would fail the
    // next request with "other side closed" (retried by a default SDK client, not with maxRetries 0).
    const rg = await startTestGateway({ simulator: tg.simulator });
    const agent = new Agent({ pipelining: 0 });
    const fetchWithoutKeepAlive = ((url: string, init?: object) => undiciFetch(url, { ...init, dispatcher: agent })) as unknown as typeof fetch;
    const sdk = () => new OpenAI({ baseURL: rg.baseURL, apiKey: 'test', maxRetries: 0, fetch: fetchWithoutKeepAlive });
    try {
      const first = await sdk().responses.create({ model: MODEL, input: scripted({ rounds: [{ text: 'Remember: the code word is PELICAN.' }] }, 'tell me a code word') });
      expect(first.status).toBe('completed');
      await rg.restart();
      const before = tg.simulator.requests.length;
      const second = await sdk().responses.create({ model: MODEL, previous_response_id: first.id, input: 'what was the code word?' });
      expect(second.status).toBe('completed');
      expect(second.previous_response_id).toBe(first.id);
      const [messages] = upstreamMessagesSince(before);
      expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(messages[0].content).toContain('tell me a code word');
      expect(messages[1].content).toBe('Remember: the code word is PELICAN.');
      expect(messages[2].content).toBe('what was the code word?');
      // the restarted gateway still serves the stored response
      expect((await sdk().responses.retrieve(first.id)).output_text).toBe('Remember: the code word is PELICAN.');
    } finally {
      await rg.close();
      await agent.close();
    }
  });

  it('retrieve returns the stored response', async () => {
    const created = await client.responses.create({ model: MODEL, input: scripted({ rounds: [{ text: 'stored text' }] }), metadata: { run: 'sdk' }, temperature: 0.5 });
    const retrieved = await client.responses.retrieve(created.id);
    expect(retrieved).toEqual(created);
    expect(retrieved.metadata).toEqual({ run: 'sdk' });
    expect(retrieved.temperature).toBe(0.5);
  });

  it('delete, then retrieve → NotFoundError', async () => {
    const created = await client.responses.create({ model: MODEL, input: scripted({ rounds: [{ text: 'to be deleted' }] }) });
    await client.responses.delete(created.id);
    const err = await client.responses.retrieve(created.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    // deleting twice is a 404 as well, and the deleted response can no longer be continued
    await expect(client.responses.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);
    const chained = await client.responses.create({ model: MODEL, previous_response_id: created.id, input: 'and then?' }).catch((e: unknown) => e);
    expect(chained).toBeInstanceOf(NotFoundError);
    expect((chained as NotFoundError).code).toBe('previous_response_not_found');
  });

  it('inputItems.list pages through every input item (limit 1, order asc)', async () => {
    const input: ResponseInputItem[] = [
      { role: 'developer', content: 'Answer briefly.' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: scripted({ rounds: [{ text: 'second answer' }] }, 'second question') },
    ];
    const created = await client.responses.create({ model: MODEL, input });
    const first = await client.responses.inputItems.list(created.id, { limit: 1, order: 'asc' });
    const pages: any[][] = [];
    for await (const page of first.iterPages()) pages.push(page.data);
    expect(pages.map((data) => data.length)).toEqual([1, 1, 1, 1]);
    const items = pages.flat();
    const ids = items.map((item) => item.id);
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(typeof id).toBe('string');
    expect(items.map((item) => [item.type, item.role])).toEqual([
      ['message', 'developer'],
      ['message', 'user'],
      ['message', 'assistant'],
      ['message', 'user'],
    ]);
    expect(items[1].content).toEqual([{ type: 'input_text', text: 'first question' }]);
    // the same items through auto-pagination, and newest first by default
    const all: any[] = [];
    for await (const item of client.responses.inputItems.list(created.id, { limit: 3, order: 'asc' })) all.push(item);
    expect(all.map((item) => item.id)).toEqual(ids);
    const desc = await client.responses.inputItems.list(created.id);
    expect(desc.data.map((item) => item.id)).toEqual([...ids].reverse());
    expect(desc.has_more).toBe(false);
  });

  it('unknown previous_response_id → NotFoundError with code previous_response_not_found', async () => {
    const err = await client.responses.create({ model: MODEL, previous_response_id: 'resp_does_not_exist', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).code).toBe('previous_response_not_found');
    expect((err as NotFoundError).param).toBe('previous_response_id');
  });

  it('a store:false response cannot be retrieved (404)', async () => {
    const created = await client.responses.create({ model: MODEL, store: false, input: scripted({ rounds: [{ text: 'ephemeral' }] }) });
    expect(created.output_text).toBe('ephemeral');
    await expect(client.responses.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reasoning + text through responses.stream(): the SDK accumulator accepts it', async () => {
    const stream = client.responses.stream({ model: MODEL, input: scripted({ rounds: [{ reasoning: 'Think about it carefully.', text: 'Done thinking.', chunks: 3 }] }) });
    const reasoningDeltas: string[] = [];
    stream.on('response.reasoning_text.delta', (e) => reasoningDeltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const reasoning = final.output[0];
    if (reasoning.type !== 'reasoning') throw new Error('expected reasoning first');
    expect(reasoning.id).toMatch(/^rs_/);
    expect(reasoning.content?.[0]?.type).toBe('reasoning_text');
    expect(reasoning.content?.[0]?.text).toBe('Think about it carefully.');
    expect(reasoningDeltas.join('')).toBe('Think about it carefully.');
    expect(final.output_text).toBe('Done thinking.');
  });

  it('a function call through responses.stream() accumulates its arguments', async () => {
    const stream = client.responses.stream({ model: MODEL, input: scripted(ROUND_TRIP), tools: [WEATHER_TOOL] });
    const final = await stream.finalResponse();
    const call = final.output[0];
    if (call.type !== 'function_call') throw new Error(`expected a function_call, got ${call.type}`);
    expect(call.arguments).toBe('{"city":"Oslo"}');
  });

  it('responses.create({stream:true}) yields the same event types as the raw SSE', async () => {
    const script = { rounds: [{ reasoning: 'a b c', text: 'x y z', tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }] };
    const sdkTypes: string[] = [];
    const sdkSeq: number[] = [];
    const stream = await client.responses.create({ model: MODEL, input: scripted(script), tools: [WEATHER_TOOL], stream: true });
    for await (const event of stream) {
      sdkTypes.push(event.type);
      sdkSeq.push(event.sequence_number);
    }
    const raw = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: scripted(script), tools: [WEATHER_TOOL], stream: true }),
    });
    const rawTypes = (await readSse(raw)).map((e) => e.type);
    expect(sdkTypes).toEqual(rawTypes);
    expect(sdkSeq).toEqual(sdkTypes.map((_, i) => i));
    expect(sdkTypes[sdkTypes.length - 1]).toBe('response.completed');
  });
});
