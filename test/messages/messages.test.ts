// The Anthropic Messages surface with the official `@anthropic-ai/sdk` against the gateway in
// front of the simulator: blocking and streamed text, one accumulator (finalMessage() equals the
// blocking body), client tool round trips, count_tokens, models, and the requests current
// clients send. Every stream passes the invariant checker (test/helpers/messages-stream.ts).
// count_tokens, models and the refused requests are answered in process (test/helpers/in-process.ts).
import Anthropic from '@anthropic-ai/sdk';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulate/server.js';
import { scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { inProcessFetch } from '../helpers/in-process.js';
import { checkMessagesStream, parseSseFrames } from '../helpers/messages-stream.js';

let tg: TestGateway;
let client: Anthropic;
/** fetch and the SDK without a socket, into tg's dispatch. */
let inProcess: typeof fetch;
let inProcessClient: Anthropic;

beforeAll(async () => {
  // image URLs forwarded as they are (limits.imageUrls: the default `inline` would fetch them, and
  // no outside host is reachable here; test/net/image-urls.test.ts covers inlining through the guard)
  tg = await startTestGateway({ config: { limits: { imageUrls: 'forward' } as never } });
  client = new Anthropic({ baseURL: tg.gateway.url, apiKey: 'test-key', maxRetries: 0 });
  inProcess = inProcessFetch(tg.gateway);
  inProcessClient = new Anthropic({ baseURL: tg.gateway.url, apiKey: 'test-key', maxRetries: 0, fetch: inProcess });
});
afterAll(async () => {
  await tg?.close();
});

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Upstream (simulator) chat requests made from `from` on. */
const upstreamSince = (from: number) => tg.simulator.requests.slice(from).map((r) => r.body as any);

/** Streams with the SDK, checking every event the SDK saw against the invariants. */
async function streamChecked(params: Record<string, unknown>): Promise<{ final: Anthropic.Message; events: any[] }> {
  const events: any[] = [];
  const stream = client.messages.stream(params as any);
  stream.on('streamEvent', (event) => events.push(event));
  const final = await stream.finalMessage();
  expect(checkMessagesStream(events)).toEqual([]);
  // `parsed_output` is the SDK's own addition (structured-output parsing), never on the wire
  const { parsed_output: _parsed, ...wire } = final as Anthropic.Message & { parsed_output?: unknown };
  return { final: wire as Anthropic.Message, events };
}

/** Ids differ per request: the message id is compared by shape only. */
const sameButId = (message: Anthropic.Message) => ({ ...message, id: expect.stringMatching(/^msg_/) });

async function raw(path: string, body: unknown, headers: Record<string, string> = {}, send: typeof fetch = fetch): Promise<Response> {
  return send(`${tg.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'k', ...headers },
    body: JSON.stringify(body),
  });
}

describe('text', () => {
  it('blocking: a message with a text block, end_turn and usage', async () => {
    const message = await client.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'Hello there, friend.' }] }) }] });
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [{ type: 'text', text: 'Hello there, friend.', citations: null }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBe(3);
  });

  it('streamed: finalMessage() equals the blocking result of the same turn', async () => {
    const params = { model: 'm', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user' as const, content: scripted({ rounds: [{ text: 'One two three four five.', chunks: 5 }] }) }] };
    const blocking = await client.messages.create(params);
    const { final, events } = await streamChecked(params);
    expect(final).toEqual(sameButId(blocking));
    expect(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join('')).toBe('One two three four five.');
    // the system prompt reached the model as a leading system message
    const [first] = upstreamSince(tg.simulator.requests.length - 1);
    expect(first.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('the raw SSE: every message has its event line, ping after message_start, no [DONE]', async () => {
    const res = await raw('/v1/messages', { model: 'm', max_tokens: 50, stream: true, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'a b c' }] }) }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    const frames = parseSseFrames(text);
    expect(checkMessagesStream(frames)).toEqual([]);
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(frames.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } });
  });

  it('a stop sequence ends the text → stop_reason stop_sequence naming it, blocking and streamed alike', async () => {
    const request = { model: 'm', max_tokens: 50, stop_sequences: ['STOP', 'HALT'], messages: [{ role: 'user' as const, content: scripted({ rounds: [{ text: 'alpha beta HALT gamma STOP delta' }], repeat_last: true }) }] };
    const blocking = await client.messages.create(request);
    expect(blocking.stop_reason).toBe('stop_sequence');
    expect(blocking.stop_sequence).toBe('HALT');
    expect(blocking.content).toEqual([{ type: 'text', text: 'alpha beta ', citations: null }]);
    const { final } = await streamChecked(request);
    expect(final.stop_reason).toBe('stop_sequence');
    expect(final.stop_sequence).toBe('HALT');
    expect(final.content).toEqual(blocking.content);
    // no stop string met: end_turn, stop_sequence null
    const plain = await client.messages.create({ ...request, stop_sequences: ['NEVER'] });
    expect(plain).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
  });

  it('max_tokens cut → stop_reason max_tokens; a refusal → refusal', async () => {
    const cut = await client.messages.create({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'one two three four' }] }) }] });
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.content).toEqual([{ type: 'text', text: 'one two', citations: null }]);
    const { final } = await streamChecked({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: scripted({ rounds: [{ text: '', refusal: 'I cannot help with that.' }] }) }] });
    expect(final.stop_reason).toBe('refusal');
    expect(final.content).toEqual([{ type: 'text', text: 'I cannot help with that.', citations: null }]);
  });

  it('thinking: reasoning becomes a thinking block with a signature, and is replayed when sent back', async () => {
    const params = {
      model: 'm',
      max_tokens: 2000,
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      messages: [{ role: 'user' as const, content: scripted({ rounds: [{ reasoning: 'Let me think about it.', text: '42' }] }) }],
    };
    const from = tg.simulator.requests.length;
    const blocking = await client.messages.create(params);
    expect(blocking.content).toEqual([
      { type: 'thinking', thinking: 'Let me think about it.', signature: expect.any(String) },
      { type: 'text', text: '42', citations: null },
    ]);
    expect(upstreamSince(from)[0].reasoning_effort).toBe('low');
    const { final } = await streamChecked(params);
    expect(final).toEqual(sameButId(blocking));
    // sent back unchanged (as clients must), it is accepted and the conversation goes on
    const next = await client.messages.create({ ...params, messages: [...params.messages, { role: 'assistant', content: blocking.content as any }, { role: 'user', content: 'thanks' }] });
    expect(next.stop_reason).toBe('end_turn');
  });
});

describe('client tools', () => {
  const script = scripted({ rounds: [{ text: 'Checking.', tool_calls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } }], chunks: 4 }, { text: 'It is 4 degrees in Oslo.' }] });

  it('blocking round trip: tool_use (toolu_ id, input object) → tool_result → answer', async () => {
    const first = await client.messages.create({ model: 'm', max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: script }] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([
      { type: 'text', text: 'Checking.', citations: null },
      { type: 'tool_use', id: 'toolu_call_w1', name: 'get_weather', input: { city: 'Oslo' }, caller: { type: 'direct' } },
    ]);
    const toolUse = first.content[1] as Anthropic.ToolUseBlock;
    const from = tg.simulator.requests.length;
    const second = await client.messages.create({
      model: 'm',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: script },
        { role: 'assistant', content: first.content as any },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '{"temp_c": 4}' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'It is 4 degrees in Oslo.', citations: null }]);
    // the model saw its call and the result, paired by id
    const messages = upstreamSince(from)[0].messages;
    const assistant = messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls[0]).toMatchObject({ id: 'toolu_call_w1', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } });
    expect(messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'toolu_call_w1', content: '{"temp_c": 4}' });
  });

  it('streamed round trip: input_json_delta fragments assembled by the SDK into the same input', async () => {
    const params = { model: 'm', max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user' as const, content: script }] };
    const blocking = await client.messages.create(params);
    const { final, events } = await streamChecked(params);
    expect(final).toEqual(sameButId(blocking));
    const fragments = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta').map((e) => e.delta.partial_json);
    expect(fragments.length).toBeGreaterThan(1);
    expect(JSON.parse(fragments.join(''))).toEqual({ city: 'Oslo' });
    expect((final.content[1] as Anthropic.ToolUseBlock).input).toEqual({ city: 'Oslo' });

    const toolUseId = (final.content[1] as Anthropic.ToolUseBlock).id;
    const from = tg.simulator.requests.length;
    const { final: answer } = await streamChecked({
      ...params,
      messages: [...params.messages, { role: 'assistant', content: final.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: [{ type: 'text', text: 'cold' }] }] }],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'It is 4 degrees in Oslo.', citations: null }]);
    // text after the results (allowed by the ordering rules) follows the tool message; is_error is kept visible
    await streamChecked({
      ...params,
      messages: [
        ...params.messages,
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUseId, content: [{ type: 'text', text: 'no such city' }], is_error: true }, { type: 'text', text: 'and?' }] },
      ],
    });
    const [, withText] = upstreamSince(from);
    expect(withText.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'toolu_call_w1', content: 'Error: no such city' },
      { role: 'user', content: 'and?' },
    ]);
  });

  it('parallel calls whose arguments arrive interleaved: one block after the other, each input whole', async () => {
    for (const style of ['interleaved', 'whole', 'vllm']) {
      const script = scripted({
        rounds: [{ tool_calls: [{ id: 'p1', name: 'get_weather', arguments: { city: 'Oslo' } }, { id: 'p2', name: 'get_weather', arguments: { city: 'Reykjavik' } }, { id: 'p3', name: 'get_weather', arguments: {} }], tool_call_style: style, chunk_size: 3 }],
      });
      const params = { model: 'm', max_tokens: 200, tools: [WEATHER_TOOL], messages: [{ role: 'user' as const, content: script }] };
      const blocking = await client.messages.create(params);
      expect(blocking.content.map((b: any) => [b.id, b.input])).toEqual([
        ['toolu_p1', { city: 'Oslo' }],
        ['toolu_p2', { city: 'Reykjavik' }],
        ['toolu_p3', {}],
      ]);
      const { final } = await streamChecked(params);
      expect(final).toEqual(sameButId(blocking));
    }
  });

  it('parallel calls and tool_choice any / tool / none; disable_parallel_tool_use', async () => {
    const two = scripted({ rounds: [{ tool_calls: [{ id: 'a', name: 'get_weather', arguments: { city: 'Oslo' } }, { id: 'b', name: 'get_weather', arguments: { city: 'Rome' } }] }] });
    const from = tg.simulator.requests.length;
    const parallel = await client.messages.create({ model: 'm', max_tokens: 200, tools: [WEATHER_TOOL], tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: [{ role: 'user', content: two }] });
    expect(parallel.content.map((b: any) => [b.type, b.id, b.input])).toEqual([
      ['tool_use', 'toolu_a', { city: 'Oslo' }],
      ['tool_use', 'toolu_b', { city: 'Rome' }],
    ]);
    await client.messages.create({ model: 'm', max_tokens: 50, tools: [WEATHER_TOOL], tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: 'hi' }] });
    await client.messages.create({ model: 'm', max_tokens: 50, tools: [WEATHER_TOOL], tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'hi' }] });
    const [any, named, none] = upstreamSince(from);
    expect([any.tool_choice, any.parallel_tool_calls]).toEqual(['required', false]);
    expect(named.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(none.tool_choice).toBe('none');
  });
});

describe('count_tokens and models', () => {
  it('countTokens: the estimate for the would-be request (the simulator has no /tokenize)', async () => {
    const small = await inProcessClient.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'Hello, world!' }] });
    expect(small).toEqual({ input_tokens: 8 });
    const withTools = await inProcessClient.messages.countTokens({ model: 'm', system: 'You are terse.', tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Hello, world!' }] });
    expect(withTools.input_tokens).toBeGreaterThan(small.input_tokens + 10);
  });

  it('GET /v1/models in Anthropic shape with anthropic-version, OpenAI shape without', async () => {
    const page = await inProcessClient.models.list();
    expect(page.data[0]).toMatchObject({ type: 'model', id: 'switchyard-sim', display_name: 'switchyard-sim' });
    expect(Date.parse(page.data[0].created_at)).toBeGreaterThan(0);
    const openai = await (await inProcess(`${tg.gateway.url}/v1/models`)).json();
    expect(openai).toMatchObject({ object: 'list', data: [{ id: 'switchyard-sim', object: 'model' }] });
    expect(await inProcessClient.models.retrieve('switchyard-sim')).toEqual(page.data[0]);
    const missing = await inProcessClient.models.retrieve('no-such-model').catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const openaiOne = await inProcess(`${tg.gateway.url}/v1/models/switchyard-sim`);
    expect(await openaiOne.json()).toMatchObject({ id: 'switchyard-sim', object: 'model' });
  });
});

describe('what current clients send', () => {
  it('beta headers and query params, newer body fields, x-api-key, system-role messages', async () => {
    const from = tg.simulator.requests.length;
    const res = await fetch(`${tg.gateway.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'mcp-client-2025-11-20,context-1m-2025-08-07', 'x-api-key': 'sk-ant-test' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 50,
        speed: 'fast',
        some_field_from_2027: { anything: true },
        cache_control: { type: 'ephemeral' },
        service_tier: 'auto',
        metadata: { user_id: 'user-1' },
        messages: [
          { role: 'system', content: 'Answer in English.' },
          { role: 'user', content: [{ type: 'text', text: scripted({ rounds: [{ text: 'fine' }] }), cache_control: { type: 'ephemeral' } }] },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).content).toEqual([{ type: 'text', text: 'fine', citations: null }]);
    expect(upstreamSince(from)[0].messages[0]).toEqual({ role: 'system', content: 'Answer in English.' });
  });

  it('defer_loading tools are not shown to the model; $schema is stripped; stop_sequences and top_k reach the upstream', async () => {
    const from = tg.simulator.requests.length;
    const message = await client.messages.create({
      model: 'm',
      max_tokens: 50,
      stop_sequences: ['END'],
      top_k: 40,
      temperature: 0.5,
      tools: [
        { ...WEATHER_TOOL, input_schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', ...WEATHER_TOOL.input_schema } as any },
        { name: 'rarely_used', input_schema: { type: 'object' }, defer_loading: true } as any,
        { type: 'code_execution_20250825', name: 'code_execution' } as any,
      ],
      messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'ok' }] }) }],
    } as any);
    expect(message.stop_reason).toBe('end_turn');
    const sent = upstreamSince(from)[0];
    expect(sent.tools.map((t: any) => t.function.name)).toEqual(['get_weather']);
    expect(sent.tools[0].function.parameters).toEqual({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    expect(sent).toMatchObject({ stop: ['END'], top_k: 40, temperature: 0.5, max_tokens: 50 });
  });

  it('output_config: format (JSON schema) reaches the upstream as response_format, effort as reasoning_effort', async () => {
    const from = tg.simulator.requests.length;
    const schema = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city', 'days'], additionalProperties: false };
    const message = await client.messages.create({ model: 'm', max_tokens: 100, output_config: { effort: 'high', format: { type: 'json_schema', schema } }, messages: [{ role: 'user', content: 'plan a trip' }] } as any);
    const sent = upstreamSince(from)[0];
    expect(sent.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema, strict: true } });
    expect(sent.reasoning_effort).toBe('high');
    const text = message.content.find((b) => b.type === 'text') as Anthropic.TextBlock;
    expect(JSON.parse(text.text)).toEqual({ city: 'example', days: 1 });
  });

  it('images (base64 and URL) and text documents reach the model; a PDF is a clear 400', async () => {
    const from = tg.simulator.requests.length;
    await client.messages.create({
      model: 'm',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The cat is orange.' }, title: 'Cat facts' },
            { type: 'text', text: 'Describe.' },
          ],
        },
      ],
    });
    const content = upstreamSince(from)[0].messages.at(-1).content;
    expect(content).toEqual([
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      { type: 'text', text: 'Document: Cat facts\n\nThe cat is orange.' },
      { type: 'text', text: 'Describe.' },
    ]);
    const err = await client.messages
      .create({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } }] }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error.error.message).toMatch(/messages\[0\]\.content\[0\]\.source.*application\/pdf.*text/);
  });
});

describe('errors in Anthropic shape', () => {
  it('missing max_tokens, bad role, unknown tool_choice: 400 invalid_request_error naming the field', async () => {
    for (const [body, pattern] of [
      [{ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, /^max_tokens/],
      [{ model: 'm', max_tokens: 5, messages: [{ role: 'robot', content: 'hi' }] }, /^messages\[0\]\.role/],
      [{ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], tool_choice: { type: 'tool', name: 'nope' } }, /^tool_choice\.name/],
    ] as const) {
      const res = await raw('/v1/messages', body, {}, inProcess);
      expect(res.status).toBe(400);
      const json: any = await res.json();
      expect(json).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(pattern) }, request_id: expect.stringMatching(/^req_/) });
    }
    const err = await inProcessClient.messages.create({ model: 'm', max_tokens: 5, messages: 'nope' as any }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('an unpaired or duplicated tool_use_id is a 400 naming the block', async () => {
    const call = { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } };
    const cases: Array<[unknown[], RegExp]> = [
      // tool_use with no tool_result in the next message
      [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: [call] }, { role: 'user', content: 'well?' }], /^messages\[1\]\.content\[0\].*without `tool_result`.*toolu_1/],
      // tool_result for an unknown id
      [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: [call] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: 'y' }] }], /^messages\[2\]\.content\[1\].*toolu_2/],
      // the same result twice
      [[{ role: 'user', content: 'hi' }, { role: 'assistant', content: [call] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }, { type: 'tool_result', tool_use_id: 'toolu_1', content: 'y' }] }], /^messages\[2\]\.content\[1\].*duplicate/],
      // the same tool_use id in two turns
      [
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [call] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] },
          { role: 'assistant', content: [call] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] },
        ],
        /^messages\[3\]\.content\[0\].*unique/,
      ],
    ];
    for (const [messages, pattern] of cases) {
      const res = await raw('/v1/messages', { model: 'm', max_tokens: 5, tools: [WEATHER_TOOL], messages }, {}, inProcess);
      const json: any = await res.json();
      expect({ status: res.status, type: json.error?.type }).toEqual({ status: 400, type: 'invalid_request_error' });
      expect(json.error.message).toMatch(pattern);
    }
  });

  it('an upstream failure before the first byte is a 502 api_error with x-should-retry', async () => {
    const res = await raw('/v1/messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: scripted({ rounds: [{ status: 500, error: 'boom' }] }) }] }, {}, inProcess);
    expect(res.status).toBe(502);
    const json: any = await res.json();
    expect(json.type).toBe('error');
    expect(json.error.type).toBe('api_error');
    expect(res.headers.get('x-should-retry')).not.toBeNull();
  });

  it('a client that disconnects mid-stream aborts the upstream request', async () => {
    const controller = new AbortController();
    const res = await fetch(`${tg.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'm', max_tokens: 50, stream: true, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'never finishes', hang_after_chunks: 2 }] }) }] }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('event: message_start');
    const aborted = tg.simulator.waitForAbort();
    controller.abort();
    await aborted;
  });

  it('a failure after the stream started is one error event, and nothing after it', async () => {
    const res = await raw('/v1/messages', { model: 'm', max_tokens: 50, stream: true, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'one two three four', error_after_chunks: 3 }] }) }] });
    const frames = parseSseFrames(await res.text());
    expect(checkMessagesStream(frames)).toEqual([]);
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', error: { type: 'api_error' } } });
    const sdk = await client.messages
      .stream({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: scripted({ rounds: [{ text: 'one two three four', error_after_chunks: 3 }] }) }] })
      .finalMessage()
      .catch((e) => e);
    expect(sdk).toBeInstanceOf(Anthropic.APIError);
  });
});

describe('max_tokens above the model limit', () => {
  let proxy: Server;
  let small: TestGateway;

  beforeAll(async () => {
    // a vLLM-like upstream whose model list states a 1000-token context (vLLM lists max_model_len)
    const sim = await startSimulator({ port: 0, modelName: 'small-model' });
    proxy = createServer(async (req, res) => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'small-model', object: 'model', created: 1, owned_by: 'vllm', max_model_len: 1000 }] }));
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const upstream = await fetch(`${sim.url.replace(/\/v1$/, '')}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: chunks.length ? Buffer.concat(chunks) : undefined });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      if (upstream.body) Readable.fromWeb(upstream.body as any).pipe(res);
      else res.end();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    small = await startTestGateway({ simulator: sim, config: { upstream: { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1` } } });
  });
  afterAll(async () => {
    await small?.close();
    await small?.simulator.close();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
  });

  it('is clamped (left to the upstream: up to the end of the context), never a failed request; a fitting one is kept', async () => {
    const sdk = new Anthropic({ baseURL: small.gateway.url, apiKey: 'k', maxRetries: 0 });
    const from = small.simulator.requests.length;
    // (the SDK itself insists on streaming for a max_tokens this large)
    const big = await sdk.messages.stream({ model: 'small-model', max_tokens: 64_000, messages: [{ role: 'user', content: 'Hello there' }] }).finalMessage();
    expect(big.stop_reason).toBe('end_turn');
    await sdk.messages.create({ model: 'small-model', max_tokens: 100, messages: [{ role: 'user', content: 'Hello there' }] });
    const [clamped, kept] = small.simulator.requests.slice(from).map((r) => r.body as any);
    expect(clamped.max_tokens).toBeUndefined();
    expect(kept.max_tokens).toBe(100);
  });
});

describe('over the Responses dialect upstream (vLLM /v1/responses)', () => {
  let viaResponses: TestGateway;
  beforeAll(async () => {
    viaResponses = await startTestGateway({ simulator: tg.simulator, config: { upstream: { api: 'responses' } } });
  });
  afterAll(async () => {
    await viaResponses?.close();
  });

  it('text and a client tool round trip, blocking and streamed alike', async () => {
    const sdk = new Anthropic({ baseURL: viaResponses.gateway.url, apiKey: 'k', maxRetries: 0 });
    const from = tg.simulator.requests.length;
    const script = scripted({ rounds: [{ tool_calls: [{ id: 'call_r1', name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'Sunny.' }] });
    const params = { model: 'm', max_tokens: 100, tools: [WEATHER_TOOL], messages: [{ role: 'user' as const, content: script }] };
    const first = await sdk.messages.create(params);
    expect(tg.simulator.requests[from].path).toBe('/v1/responses');
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: 'toolu_call_r1', name: 'get_weather', input: { city: 'Oslo' }, caller: { type: 'direct' } }]);
    const events: any[] = [];
    const stream = sdk.messages.stream(params);
    stream.on('streamEvent', (e) => events.push(e));
    const { parsed_output: _p, ...streamed } = (await stream.finalMessage()) as any;
    expect(checkMessagesStream(events)).toEqual([]);
    expect(streamed).toEqual(sameButId(first));
    const answer = await sdk.messages.create({ ...params, messages: [...params.messages, { role: 'assistant', content: first.content as any }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_call_r1', content: 'sunny, 21 C' }] }] });
    expect(answer.content).toEqual([{ type: 'text', text: 'Sunny.', citations: null }]);
  });
});
