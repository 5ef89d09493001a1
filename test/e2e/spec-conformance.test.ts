// Every stream shape the gateway produces, checked against the Open Responses spec and the
// ordering rules of responses-api.md §5, through raw HTTP (no SDK in between). The blocking
// answer and the stored copy of the same script must be the same Response as the stream's last.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse, scripted, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { ITEM_ID_PREFIX, checkStreamInvariants, validateItem, validateResponse, validateStreamEvent } from '../helpers/spec.js';

let tg: TestGateway;

beforeAll(async () => {
  tg = await startTestGateway();
});

afterAll(async () => {
  await tg.close();
});

const TOOLS = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
];

function post(body: unknown): Promise<Response> {
  return fetch(`${tg.baseURL}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Ids and clock readings differ between two runs of one script; everything else must not. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if ((key === 'id' || key === 'call_id' || key === 'item_id') && typeof v === 'string') out[key] = '<id>';
    else if ((key === 'created_at' || key === 'completed_at') && typeof v === 'number') out[key] = '<timestamp>';
    else out[key] = normalize(v);
  }
  return out;
}

interface Case {
  name: string;
  script: unknown;
  /** Extra request fields. */
  request?: Record<string, unknown>;
  terminal: 'response.completed' | 'response.incomplete' | 'response.failed';
  status: 'completed' | 'incomplete' | 'failed';
  incompleteReason?: string;
  outputTypes: string[];
  /** Expected assistant text (all output_text parts), when there is a message. */
  text?: string;
  /** Expected function calls, in output order. */
  calls?: Array<{ name: string; arguments: string }>;
  reasoning?: string;
}

const CASES: Case[] = [
  {
    name: 'plain text in several chunks',
    script: { rounds: [{ text: 'The quick brown fox jumps over the lazy dog.', chunks: 5 }] },
    terminal: 'response.completed',
    status: 'completed',
    outputTypes: ['message'],
    text: 'The quick brown fox jumps over the lazy dog.',
  },
  {
    // Fails while the gateway emits `encrypted_content: null` on reasoning items (see the
    // dedicated test below): the spec's ReasoningBody allows a string or nothing.
    name: 'reasoning then text',
    script: { rounds: [{ reasoning: 'The user wants the answer. It is 42.', text: 'The answer is 42.', chunks: 3 }] },
    terminal: 'response.completed',
    status: 'completed',
    outputTypes: ['reasoning', 'message'],
    text: 'The answer is 42.',
    reasoning: 'The user wants the answer. It is 42.',
  },
  {
    name: 'a single client function call',
    script: { rounds: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }] },
    request: { tools: TOOLS },
    terminal: 'response.completed',
    status: 'completed',
    outputTypes: ['function_call'],
    calls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }],
  },
  {
    name: 'parallel function calls, interleaved argument fragments',
    script: {
      rounds: [
        {
          tool_calls: [
            { name: 'get_weather', arguments: { city: 'Oslo, Norway' } },
            { name: 'get_time', arguments: { tz: 'Europe/Oslo' } },
          ],
          tool_call_style: 'interleaved',
        },
      ],
    },
    request: { tools: TOOLS },
    terminal: 'response.completed',
    status: 'completed',
    outputTypes: ['function_call', 'function_call'],
    calls: [
      { name: 'get_weather', arguments: '{"city":"Oslo, Norway"}' },
      { name: 'get_time', arguments: '{"tz":"Europe/Oslo"}' },
    ],
  },
  {
    name: 'text, then a tool call',
    script: { rounds: [{ text: 'Let me look that up.', tool_calls: [{ name: 'get_weather', arguments: { city: 'Bergen' } }] }] },
    request: { tools: TOOLS },
    terminal: 'response.completed',
    status: 'completed',
    outputTypes: ['message', 'function_call'],
    text: 'Let me look that up.',
    calls: [{ name: 'get_weather', arguments: '{"city":"Bergen"}' }],
  },
  {
    // The simulator cuts the plan at max_output_tokens pieces and finishes with `length`.
    name: 'max_output_tokens reached',
    script: { rounds: [{ text: 'one two three four five six seven' }] },
    request: { max_output_tokens: 3 },
    terminal: 'response.incomplete',
    status: 'incomplete',
    incompleteReason: 'max_output_tokens',
    outputTypes: ['message'],
    text: 'one two three',
  },
  {
    name: 'content filter',
    script: { rounds: [{ text: 'Something the filter stops', finish_reason: 'content_filter' }] },
    terminal: 'response.incomplete',
    status: 'incomplete',
    incompleteReason: 'content_filter',
    outputTypes: ['message'],
    text: 'Something the filter stops',
  },
  {
    // role chunk + 2 text pieces, then the vLLM mid-stream error chunk
    name: 'upstream error mid-stream',
    script: { rounds: [{ text: 'alpha beta gamma delta', error_after_chunks: 3 }] },
    terminal: 'response.failed',
    status: 'failed',
    outputTypes: ['message'],
    text: 'alpha beta',
  },
];

function outputText(response: Record<string, any>): string {
  let text = '';
  for (const item of response.output) if (item.type === 'message') for (const part of item.content) if (part.type === 'output_text') text += part.text;
  return text;
}

describe.each(CASES)('$name', (c) => {
  const body = (stream: boolean) => ({ model: 'conformance-model', input: scripted(c.script, `case: ${c.name}`), stream, ...c.request });
  let events: Array<Record<string, any>> = [];
  let final: Record<string, any>;

  beforeAll(async () => {
    const res = await post(body(true));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    events = await readSse(res);
    final = events[events.length - 1]?.response;
  });

  it('every event validates against the spec', () => {
    const errors = events.flatMap((e) => validateStreamEvent(e));
    expect(errors).toEqual([]);
  });

  it('keeps the ordering rules (sequence, lifecycle, one terminal, indexes, item ids)', () => {
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(events[events.length - 1].type).toBe(c.terminal);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(checkStreamInvariants(events)).toEqual([]);
  });

  it('ends with the expected final response, which validates', () => {
    expect(final.id).toMatch(/^resp_/);
    expect(final.status).toBe(c.status);
    expect(final.output.map((item: { type: string }) => item.type)).toEqual(c.outputTypes);
    for (const item of final.output) expect(item.id.startsWith(ITEM_ID_PREFIX[item.type])).toBe(true);
    if (c.text !== undefined) expect(outputText(final)).toBe(c.text);
    if (c.calls) {
      const calls = final.output.filter((item: { type: string }) => item.type === 'function_call');
      expect(calls.map((call: Record<string, unknown>) => ({ name: call.name, arguments: call.arguments }))).toEqual(c.calls);
      expect(new Set(calls.map((call: { call_id: string }) => call.call_id)).size).toBe(calls.length);
      for (const call of calls) expect(call.status).toBe('completed');
    }
    if (c.reasoning !== undefined) {
      const reasoning = final.output.find((item: { type: string }) => item.type === 'reasoning');
      expect(reasoning.content).toEqual([{ type: 'reasoning_text', text: c.reasoning }]);
    }
    if (c.status === 'completed') {
      expect(final.completed_at).toEqual(expect.any(Number));
      expect(final.incomplete_details).toBeNull();
      expect(final.error).toBeNull();
      expect(final.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    } else if (c.status === 'incomplete') {
      expect(final.incomplete_details).toEqual({ reason: c.incompleteReason });
      expect(final.completed_at).toBeNull();
      expect(final.error).toBeNull();
      // the cut-off message is announced incomplete
      for (const item of final.output) expect(item.status).toBe('incomplete');
    } else {
      expect(final.error).toEqual({ code: expect.any(String), message: expect.any(String) });
      expect(final.error.code.length).toBeGreaterThan(0);
      expect(final.completed_at).toBeNull();
    }
    if (c.request?.max_output_tokens !== undefined) expect(final.max_output_tokens).toBe(c.request.max_output_tokens);
    expect(validateResponse(final)).toEqual([]);
    for (const item of final.output) expect(validateItem(item)).toEqual([]);
  });

  it('blocking answer = the stream’s final response (ids/timestamps aside) = GET, exactly', async () => {
    const res = await post(body(false));
    let blocking: Record<string, any>;
    if (c.status === 'failed') {
      // A blocking turn that failed after generation began is an HTTP error naming the stored response.
      expect(res.status).toBe(502);
      const error = ((await res.json()) as { error: Record<string, any> }).error;
      expect(error.type).toBe('upstream_error');
      const id = /resp_[A-Za-z0-9]+/.exec(error.message)?.[0];
      expect(id).toBeDefined();
      const got = await fetch(`${tg.baseURL}/responses/${id}`);
      expect(got.status).toBe(200);
      blocking = (await got.json()) as Record<string, any>;
    } else {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      blocking = (await res.json()) as Record<string, any>;
      const got = await fetch(`${tg.baseURL}/responses/${blocking.id}`);
      expect(got.status).toBe(200);
      expect(await got.json()).toEqual(blocking);
    }
    expect(blocking.id).not.toBe(final.id);
    expect(normalize(blocking)).toEqual(normalize(final));
    // the stored copy of the streamed response is its final event's response
    const stored = await fetch(`${tg.baseURL}/responses/${final.id}`);
    expect(stored.status).toBe(200);
    expect(await stored.json()).toEqual(final);
  });
});

describe('spec details the cases above rely on', () => {
  it('reasoning items carry encrypted_content as a string or not at all (spec ReasoningBody)', async () => {
    // KNOWN GATEWAY BUG: src/engine/item-streams.ts ReasoningStream.finish() sets
    // `encrypted_content = null`; the Open Responses ReasoningBody types it `string`.
    const res = await post({ model: 'm', input: scripted({ rounds: [{ reasoning: 'hmm', text: 'ok' }] }), stream: false });
    const response = (await res.json()) as Record<string, any>;
    const reasoning = response.output.find((item: { type: string }) => item.type === 'reasoning');
    expect(reasoning).toBeDefined();
    expect(reasoning.encrypted_content === undefined || typeof reasoning.encrypted_content === 'string').toBe(true);
    expect(validateItem(reasoning)).toEqual([]);
  });

  it('the created/in_progress snapshots are the initial response, status in_progress, empty output', async () => {
    const res = await post({ model: 'm', input: scripted({ rounds: [{ text: 'hi' }] }), stream: true, tools: TOOLS, metadata: { k: 'v' } });
    const events = await readSse(res);
    for (const e of events.slice(0, 2)) {
      expect(e.response).toMatchObject({ status: 'in_progress', output: [], usage: null, error: null, completed_at: null, metadata: { k: 'v' } });
      expect(e.response.tools.map((t: { name: string }) => t.name)).toEqual(['get_weather', 'get_time']);
      expect(validateResponse(e.response)).toEqual([]);
    }
  });

  it('the validator rejects what the spec forbids (self-check)', () => {
    expect(validateStreamEvent({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, delta: 'x' })).not.toEqual([]);
    expect(validateStreamEvent({ type: 'response.reasoning_text.delta', sequence_number: 1, item_id: 'rs_1', output_index: 0, content_index: 0, delta: 'x' })).toEqual([]);
    expect(validateStreamEvent({ type: 'response.custom_tool_call_input.delta', sequence_number: 1 })).toEqual([]);
    expect(() => validateStreamEvent({ type: 'response.reasoning_part.added', sequence_number: 1 })).toThrow(/not defined by the Open Responses spec/);
    expect(validateItem({ type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{}' })).not.toEqual([]);
    expect(checkStreamInvariants([{ type: 'response.created', sequence_number: 1, response: { id: 'x' } }])).not.toEqual([]);
    expect(() => validateResponse({ tools: [{ type: 'web_search' }] })).toThrow(/plain function tools/);
  });
});

describe('more stream shapes and echoed request fields stay valid', () => {
  const variants: Record<string, Record<string, unknown>> = {
    'refusal only': { input: scripted({ rounds: [{ refusal: 'I cannot help with that.', chunks: 3 }] }) },
    'text, then a refusal part in the same message': { input: scripted({ rounds: [{ text: 'Partly:', refusal: ' no more.' }] }) },
    'empty answer (no output items)': { input: scripted({ rounds: [{ text: '' }] }) },
    'text.format json_object': { text: { format: { type: 'json_object' } }, input: 'give me json' },
    'tool_choice forcing a function': { tools: TOOLS, tool_choice: { type: 'function', name: 'get_weather' }, input: 'weather?' },
    'tool_choice required': { tools: TOOLS, tool_choice: 'required', input: 'anything' },
    'tool_choice none': { tools: TOOLS, tool_choice: 'none', input: 'call get_weather' },
    'tool_choice allowed_tools': { tools: TOOLS, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_time' }] }, input: 'hi' },
    'every scalar echo field set': {
      input: 'hi',
      instructions: 'Be terse.',
      truncation: 'auto',
      metadata: { a: 'b' },
      user: 'u1',
      safety_identifier: 's',
      prompt_cache_key: 'k',
      top_p: 0.5,
      temperature: 0,
      max_tool_calls: 3,
      parallel_tool_calls: false,
      top_logprobs: 2,
    },
    'input as typed items (system, parts, assistant history)': {
      input: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'yo' }] },
        { role: 'user', content: 'again' },
      ],
    },
  };

  it.each(Object.keys(variants))('%s', async (name) => {
    const res = await post({ model: 'm', stream: true, ...variants[name] });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.flatMap((e) => validateStreamEvent(e))).toEqual([]);
    expect(checkStreamInvariants(events)).toEqual([]);
    const final = events[events.length - 1].response;
    expect(final.status).toBe('completed');
    expect(validateResponse(final)).toEqual([]);
  });

  it('text.format json_schema is echoed with description and strict (spec JsonSchemaResponseFormat requires both)', async () => {
    // KNOWN GATEWAY BUG: src/engine/request.ts parseText() echoes text.format as sent; the spec's
    // JsonSchemaResponseFormat (and OpenAI's real echo) always carries `description` (null when
    // absent) and `strict`. The spec also types the echoed `schema` as null-only, which looks like
    // a defect of the spec document itself, so `schema` is not checked here.
    const format = { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } };
    const res = await post({ model: 'm', input: 'json please', text: { format } });
    expect(res.status).toBe(200);
    const response = (await res.json()) as Record<string, any>;
    expect(JSON.parse(response.output[0].content[0].text)).toEqual({ a: 'example' });
    expect(response.text.format).toMatchObject({ type: 'json_schema', name: 'answer', schema: format.schema });
    expect(response.text.format).toHaveProperty('description', null);
    expect(typeof response.text.format.strict).toBe('boolean');
  });
});
