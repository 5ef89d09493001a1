import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { checkStreamInvariants, validateStreamEvent } from '../helpers/spec.js';

const weather = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false } as const;

describe('the responses dialect (vLLM /v1/responses as the upstream)', () => {
  let tg: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { upstream: { api: 'responses' } } });
    client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
  });
  afterAll(() => tg.close());

  it('text and reasoning stream through, vLLM quirks dropped, events valid', async () => {
    const script = { rounds: [{ reasoning: 'think think', text: 'Hello from vLLM responses' }] };
    const events = await readSse(await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted(script), stream: true }) }));
    expect(tg.simulator.requests.at(-1)!.path).toBe('/v1/responses');
    expect(events.some((e) => e.type.startsWith('response.reasoning_part'))).toBe(false);
    for (const event of events) expect(validateStreamEvent(event)).toEqual([]);
    expect(checkStreamInvariants(events as any)).toEqual([]);
    const final = events.at(-1)!.response;
    expect(final.output.map((i: any) => i.type)).toEqual(['reasoning', 'message']);
    expect(final.output[1].content[0].text).toBe('Hello from vLLM responses');
    expect(final.output[0].id).toMatch(/^rs_/);
    expect(final.output[1].id).toMatch(/^msg_/);
  });

  it('a function call round trip', async () => {
    const script = { rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is cold.' }] };
    const first = await client.responses.create({ model: 'm', input: scripted(script), tools: [weather] });
    const call = first.output.find((i) => i.type === 'function_call') as any;
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    const second = await client.responses.create({ model: 'm', previous_response_id: first.id, tools: [weather], input: [{ type: 'function_call_output', call_id: call.call_id, output: '-3 °C' }] });
    expect(second.output_text).toBe('It is cold.');
    const sent = tg.simulator.requests.at(-1)!.body;
    expect(sent.input.find((i: any) => i.type === 'function_call_output')).toEqual({ type: 'function_call_output', call_id: call.call_id, output: '-3 °C' });
    expect(sent.tools[0]).toMatchObject({ type: 'function', name: 'get_weather' });
  });

  it('recognises incomplete even though vLLM ends with response.completed', async () => {
    const response = await client.responses.create({ model: 'm', input: scripted({ rounds: [{ text: 'a b c d e f g h' }] }), max_output_tokens: 3 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });
});

describe('upstream timeouts', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway({ config: { upstream: { firstTokenTimeoutMs: 300, idleTimeoutMs: 300, maxRetries: 0 } } });
  });
  afterAll(() => tg.close());

  it('no first token in time → 504 before the stream starts', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: scripted({ rounds: [{ hang: true }] }) }) });
    expect(res.status).toBe(504);
    expect(((await res.json()) as any).error.code).toBe('upstream_timeout');
  });

  it('an idle stream → one response.failed terminal event, stored as failed', async () => {
    const res = await fetch(`${tg.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, input: scripted({ rounds: [{ text: 'one two three four', hang_after_chunks: 2 }] }) }),
    });
    const events = await readSse(res);
    const terminal = events.filter((e) => ['response.completed', 'response.failed', 'response.incomplete'].includes(e.type));
    expect(terminal.map((e) => e.type)).toEqual(['response.failed']);
    expect(terminal[0].response.error.message).toMatch(/idle/);
    const stored = (await (await fetch(`${tg.baseURL}/responses/${terminal[0].response.id}`)).json()) as any;
    expect(stored.status).toBe('failed');
  });
});

describe('GET /v1/models', () => {
  let tg: TestGateway;
  beforeAll(async () => {
    tg = await startTestGateway();
  });
  afterAll(() => tg.close());

  it('lists what the upstream serves', async () => {
    const client = new OpenAI({ baseURL: tg.baseURL, apiKey: 'test', maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['switchyard-sim']);
  });
});
