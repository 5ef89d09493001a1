// The vLLM-like simulator, over real sockets on 127.0.0.1 (see src/simulate/README.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulate/server.js';

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ modelName: 'sim-model' });
});

afterAll(async () => {
  await sim.close();
});

const HEX32 = /^[0-9a-f]{32}$/;
const script = (s: unknown) => `#sim ${JSON.stringify(s)}`;
const userScript = (s: unknown, text = 'hi') => ({ role: 'user', content: `${text}\n${script(s)}` });

function post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

const json = (res: Response): Promise<any> => res.json();

/** `data:` payloads of an SSE body, in order ("[DONE]" kept as a string). */
function dataLines(text: string): any[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const data = block.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

async function chatStream(body: Record<string, unknown>): Promise<{ chunks: any[]; raw: string; res: Response }> {
  const res = await post('/chat/completions', { model: 'client-model', stream: true, ...body });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const raw = await res.text();
  return { chunks: dataLines(raw), raw, res };
}

/** Reads a body until the server stops or cuts it; never throws. */
async function readUntilCut(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: null };
      text += dec.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

const deltas = (chunks: any[]) => chunks.filter((c) => c !== '[DONE]' && c.choices.length > 0).map((c) => c.choices[0].delta);
const content = (chunks: any[]) => deltas(chunks).map((d) => d.content ?? '').join('');

describe('simulator: basics', () => {
  it('lists the model', async () => {
    const res = await fetch(`${sim.url}/models`);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({
      object: 'list',
      data: [{ id: 'sim-model', object: 'model', created: expect.any(Number), owned_by: 'switchyard' }],
    });
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('rejects a bad JSON body the vLLM way', async () => {
    const res = await post('/chat/completions', '{"model": ');
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body).toEqual({ error: { message: expect.any(String), type: 'BadRequestError', param: null, code: 400 } });
  });

  it('streams text in N chunks with the exact vLLM chunk shape, ending with [DONE]', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    const { chunks, raw } = await chatStream({ messages: [userScript({ rounds: [{ text, chunks: 5 }] })] });
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(chunks.at(-1)).toBe('[DONE]');
    const first = chunks[0];
    expect(first).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9a-f]{32}$/),
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'client-model',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
    const body = chunks.slice(1, -2);
    expect(body).toHaveLength(5);
    for (const c of body) {
      expect(c.id).toBe(first.id);
      expect(Object.keys(c)).toEqual(['id', 'object', 'created', 'model', 'choices']); // no usage key (vLLM omits it)
      expect(Object.keys(c.choices[0].delta)).toEqual(['content']);
    }
    expect(content(chunks)).toBe(text);
    expect(chunks.at(-2).choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop', stop_reason: null });
  });

  it('streams the default echo word by word, and answers non-stream with usage', async () => {
    const { chunks } = await chatStream({ messages: [{ role: 'user', content: 'hello big world' }] });
    const pieces = deltas(chunks).slice(1, -1).map((d) => d.content);
    expect(pieces).toEqual(['You', ' said:', ' hello', ' big', ' world']);

    const res = await post('/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hello big world' }] });
    expect(await json(res)).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'You said: hello big world', refusal: null },
          logprobs: null,
          finish_reason: 'stop',
          stop_reason: null,
        },
      ],
      usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 },
    });
  });

  it('default behaviour: JSON for response_format, a short reasoning for reasoning_effort', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string' }, tags: { type: 'array' }, ok: { type: 'boolean' }, opt: { type: 'string' } },
      required: ['name', 'tags', 'ok'],
    };
    const body = await json(await post('/chat/completions', {
      model: 'm',
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
      messages: [{ role: 'user', content: 'describe it' }],
    }));
    expect(JSON.parse(body.choices[0].message.content)).toEqual({ name: 'example', tags: [], ok: true });
    expect(body.choices[0].message.reasoning).toBe('Thinking about: describe it');
    expect(body.usage.completion_tokens_details).toEqual({ reasoning_tokens: 4 });
  });

  it('records every POST', async () => {
    const before = sim.requests.length;
    await (await post('/chat/completions', { model: 'rec', messages: [{ role: 'user', content: 'x' }] })).text();
    expect(sim.requests.length).toBe(before + 1);
    const rec = sim.requests.at(-1)!;
    expect(rec).toMatchObject({ path: '/v1/chat/completions', aborted: false, finished: true });
    expect(rec.body.model).toBe('rec');
  });
});

describe('simulator: tool calls', () => {
  const weather = { name: 'get_weather', arguments: { city: 'Oslo', unit: 'celsius' } };

  it('chunks a call the vLLM way: id/name once, last fragment in the finish chunk', async () => {
    const { chunks } = await chatStream({ messages: [userScript({ rounds: [{ tool_calls: [weather], chunks: 3 }] })] });
    const toolDeltas = chunks.slice(1, -1).filter((c) => c.choices[0].delta.tool_calls);
    expect(toolDeltas).toHaveLength(4); // header + 2 fragments + the finish chunk's flush
    const [header, ...frags] = toolDeltas.map((c) => c.choices[0].delta.tool_calls);
    expect(header).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/),
        type: 'function',
        function: { name: 'get_weather', arguments: '' },
      },
    ]);
    for (const f of frags) {
      expect(f).toHaveLength(1);
      expect(Object.keys(f[0])).toEqual(['index', 'function']);
      expect(Object.keys(f[0].function)).toEqual(['arguments']);
    }
    const finish = chunks.at(-2).choices[0];
    expect(finish.finish_reason).toBe('tool_calls');
    expect(finish.delta.tool_calls[0].function.arguments).toBe(frags.at(-1)![0].function.arguments);
    const args = frags.map((f) => f[0].function.arguments).join('');
    expect(args).toBe(JSON.stringify(weather.arguments));
  });

  it('interleaves parallel calls round robin', async () => {
    const calls = [
      { name: 'a', arguments: '{"x":1}', id: 'call_A' },
      { name: 'b', arguments: '{"y":2}' },
    ];
    const { chunks } = await chatStream({
      messages: [userScript({ rounds: [{ tool_calls: calls, chunks: 2, tool_call_style: 'interleaved' }] })],
    });
    const seq = chunks.slice(1, -2).map((c) => c.choices[0].delta.tool_calls[0]);
    expect(seq.map((t) => t.index)).toEqual([0, 1, 0, 1, 0, 1]);
    expect(seq[0]).toMatchObject({ id: 'call_A', function: { name: 'a', arguments: '' } });
    expect(seq[1]).toMatchObject({ id: expect.stringMatching(/^chatcmpl-tool-/), function: { name: 'b' } });
    expect(seq.filter((t) => t.index === 0).map((t) => t.function.arguments).join('')).toBe('{"x":1}');
    expect(seq.filter((t) => t.index === 1).map((t) => t.function.arguments).join('')).toBe('{"y":2}');
    expect(chunks.at(-2).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
  });

  it('sends each call whole, all parallel calls in one chunk, with the "whole" style', async () => {
    const calls = [weather, { name: 'get_time', arguments: 'not json' }];
    const { chunks } = await chatStream({
      messages: [userScript({ rounds: [{ tool_calls: calls, tool_call_style: 'whole' }] })],
    });
    expect(chunks).toHaveLength(4); // role, calls, finish, [DONE]
    expect(chunks[1].choices[0].delta.tool_calls).toEqual([
      { index: 0, id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(weather.arguments) } },
      { index: 1, id: expect.any(String), type: 'function', function: { name: 'get_time', arguments: 'not json' } },
    ]);
  });

  it('finishes with "stop" under a named tool_choice (vLLM guided decoding)', async () => {
    const tools = [
      {
        type: 'function',
        function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' }, n: { type: 'integer' } }, required: ['q', 'n'] } },
      },
    ];
    const { chunks } = await chatStream({
      tools,
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      messages: [{ role: 'user', content: 'anything' }],
    });
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    const args = deltas(chunks).flatMap((d) => d.tool_calls ?? []).map((t: any) => t.function.arguments).join('');
    expect(JSON.parse(args)).toEqual({ q: 'example', n: 1 });
  });

  it('default behaviour: "call X with {...}" calls the tool; a tool result is reported', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const res = await post('/chat/completions', {
      model: 'm',
      tools,
      messages: [{ role: 'user', content: 'Please call get_weather with {"city": "Paris"} now' }],
    });
    const body = await json(res);
    expect(body.choices[0].finish_reason).toBe('tool_calls');
    expect(body.choices[0].message.content).toBeNull();
    const call = body.choices[0].message.tool_calls[0];
    expect(call).toEqual({ id: expect.stringMatching(/^chatcmpl-tool-/), type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } });

    const res2 = await post('/chat/completions', {
      model: 'm',
      tools,
      messages: [
        { role: 'user', content: 'Please call get_weather with {"city": "Paris"} now' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
      ],
    });
    expect((await json(res2)).choices[0].message.content).toBe('The tool returned: sunny, 21C');
  });

  it('picks the round by the assistant turns after the last user message', async () => {
    const s = { rounds: [{ tool_calls: [{ name: 'f', arguments: {}, id: 'call_1' }] }, { text: 'second round' }] };
    const base = [{ role: 'system', content: script(s) }, { role: 'user', content: 'go' }];
    const first = await json(await post('/chat/completions', { model: 'm', messages: base }));
    expect(first.choices[0].message.tool_calls[0].id).toBe('call_1');
    const followUp = [
      ...base,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
    ];
    const { chunks } = await chatStream({ messages: followUp });
    expect(content(chunks)).toBe('second round');
    // Past the end of the script without repeat_last: the default behaviour.
    const third = await json(await post('/chat/completions', {
      model: 'm',
      messages: [...followUp, { role: 'assistant', content: 'second round' }],
    }));
    expect(third.choices[0].message.content).toBe('You said: go');
  });
});

describe('simulator: usage and reasoning', () => {
  it('sends usage only with include_usage, in a final choices: [] chunk', async () => {
    const messages = [userScript({ rounds: [{ text: 'a b c' }] })];
    const without = await chatStream({ messages });
    expect(without.raw).not.toContain('"usage"');
    const withUsage = await chatStream({ messages, stream_options: { include_usage: true } });
    const usageChunk = withUsage.chunks.at(-2);
    expect(withUsage.chunks.at(-1)).toBe('[DONE]');
    expect(usageChunk).toEqual({
      id: withUsage.chunks[0].id,
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'client-model',
      choices: [],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: 3, total_tokens: usageChunk.usage.prompt_tokens + 3 },
    });
    expect(withUsage.chunks.slice(0, -2).every((c: any) => !('usage' in c))).toBe(true);
  });

  it('streams reasoning first as delta.reasoning, or reasoning_content when asked', async () => {
    const step = { reasoning: 'hmm let me think', text: 'answer', usage: { prompt_tokens: 7 } };
    const a = await chatStream({ messages: [userScript({ rounds: [step] })], stream_options: { include_usage: true } });
    const ds = deltas(a.chunks).slice(1, -1);
    expect(ds.map((d) => Object.keys(d)[0])).toEqual(['reasoning', 'reasoning', 'reasoning', 'reasoning', 'content']);
    expect(ds.map((d) => d.reasoning ?? '').join('')).toBe('hmm let me think');
    expect(a.chunks.at(-2).usage).toEqual({
      prompt_tokens: 7,
      completion_tokens: 5,
      total_tokens: 12,
      completion_tokens_details: { reasoning_tokens: 4 },
    });

    const b = await chatStream({ messages: [userScript({ rounds: [{ ...step, reasoning_field: 'reasoning_content' }] })] });
    expect(deltas(b.chunks).slice(1, -1).map((d) => Object.keys(d)[0])[0]).toBe('reasoning_content');
    expect(b.raw).not.toContain('"reasoning"');

    const nonStream = await json(await post('/chat/completions', { model: 'm', messages: [userScript({ rounds: [step] })] }));
    expect(nonStream.choices[0].message).toEqual({ role: 'assistant', content: 'answer', refusal: null, reasoning: 'hmm let me think' });
  });

  it('truncates to max_tokens and finishes with "length"', async () => {
    const res = await post('/chat/completions', {
      model: 'm',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'one two three four' }],
    });
    const body = await json(res);
    expect(body.choices[0].message.content).toBe('You said: one');
    expect(body.choices[0].finish_reason).toBe('length');
  });

  it('inserts empty deltas between real chunks when asked', async () => {
    const { chunks } = await chatStream({ messages: [userScript({ rounds: [{ text: 'x y', empty_deltas: true }] })] });
    expect(deltas(chunks)).toEqual([{ role: 'assistant', content: '' }, { content: 'x' }, {}, { content: '' }, { content: ' y' }, {}]);
  });
});

describe('simulator: failures', () => {
  it('fails with a status only fail_times times, then answers', async () => {
    const messages = [userScript({ rounds: [{ status: 503, error: 'busy', fail_times: 2 }] }, 'retry me')];
    for (let i = 0; i < 2; i++) {
      const res = await post('/chat/completions', { model: 'm', stream: true, messages });
      expect(res.status).toBe(503);
      expect(await json(res)).toEqual({ error: { message: 'busy', type: 'InternalServerError', param: null, code: 503 } });
    }
    const ok = await chatStream({ messages });
    expect(content(ok.chunks)).toBe('You said: retry me');

    const always = [userScript({ rounds: [{ status: 400 }] })];
    for (let i = 0; i < 2; i++) {
      const res = await post('/chat/completions', { model: 'm', messages: always });
      expect(res.status).toBe(400);
      expect(await json(res)).toEqual({ error: { message: 'simulated failure', type: 'BadRequestError', param: null, code: 400 } });
    }
  });

  it('hangs until the client aborts, and observes the abort', async () => {
    const before = sim.abortedCount();
    const ac = new AbortController();
    const res = await post('/chat/completions', { model: 'm', stream: true, messages: [userScript({ rounds: [{ hang: true }] })] }, ac.signal);
    expect(res.status).toBe(200);
    expect(sim.activeCount()).toBeGreaterThanOrEqual(1);
    const rec = sim.requests.at(-1)!;
    ac.abort();
    await sim.waitForAbort(2000);
    expect(sim.abortedCount()).toBe(before + 1);
    expect(rec).toMatchObject({ aborted: true, finished: false });
    expect(sim.activeCount()).toBe(0);
  });

  it('hangs after N chunks (non-stream hangs before answering)', async () => {
    const ac = new AbortController();
    const res = await post(
      '/chat/completions',
      { model: 'm', stream: true, messages: [userScript({ rounds: [{ text: 'a b c d', hang_after_chunks: 2 }] })] },
      ac.signal,
    );
    const reader = res.body!.getReader();
    let text = '';
    while (dataLines(text).length < 2) text += new TextDecoder().decode((await reader.read()).value);
    expect(dataLines(text).map((c) => c.choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'a' }]);
    ac.abort();
    await sim.waitForAbort(2000);

    const ac2 = new AbortController();
    const pending = post('/chat/completions', { model: 'm', messages: [userScript({ rounds: [{ hang: true }] })] }, ac2.signal);
    setTimeout(() => ac2.abort(), 50);
    await expect(pending).rejects.toThrow();
    await sim.waitForAbort(2000);
  });

  it('cuts the connection after N chunks with close_after_chunks', async () => {
    const before = sim.abortedCount();
    const res = await post('/chat/completions', {
      model: 'm',
      stream: true,
      messages: [userScript({ rounds: [{ text: 'a b c d e', close_after_chunks: 3 }] })],
    });
    expect(res.status).toBe(200);
    const { text, error } = await readUntilCut(res);
    expect(error).toBeTruthy();
    expect(dataLines(text).map((c) => c.choices[0].delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'a' }, { content: ' b' }]);
    expect(text).not.toContain('[DONE]');
    expect(sim.abortedCount()).toBe(before); // our own cut is not a client abort
  });

  it('sends a mid-stream error then [DONE] with error_after_chunks', async () => {
    const { chunks } = await chatStream({ messages: [userScript({ rounds: [{ text: 'a b c', error_after_chunks: 2 }] })] });
    expect(chunks).toHaveLength(4);
    expect(chunks[1].choices[0].delta).toEqual({ content: 'a' });
    expect(chunks[2]).toEqual({ error: { message: 'simulated mid-stream error', type: 'InternalServerError', code: 500 } });
    expect(chunks[3]).toBe('[DONE]');
  });

  it('waits delay_ms between chunks', async () => {
    const t0 = Date.now();
    const { chunks } = await chatStream({ messages: [userScript({ rounds: [{ text: 'a b c', delay_ms: 30 }] })] });
    expect(content(chunks)).toBe('a b c');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5 * 30 - 10); // role + 3 pieces + finish
  });

  it('answers an invalid script with a 400 naming the problem', async () => {
    const res = await post('/chat/completions', { model: 'm', messages: [{ role: 'user', content: '#sim {"rounds": [{"txt": "x"}]}' }] });
    expect(res.status).toBe(400);
    expect((await json(res)).error.message).toContain('unknown field "txt"');
  });
});

describe('simulator: vLLM /v1/responses', () => {
  async function responsesStream(body: Record<string, unknown>): Promise<any[]> {
    const res = await post('/responses', { model: 'resp-model', stream: true, ...body });
    expect(res.status).toBe(200);
    const raw = await res.text();
    expect(raw).not.toContain('[DONE]');
    for (const block of raw.split('\n\n').filter(Boolean)) {
      const [eventLine, dataLine] = block.split('\n');
      expect(eventLine!.slice(7)).toBe(JSON.parse(dataLine!.slice(6)).type);
    }
    return dataLines(raw);
  }

  it('streams reasoning with reasoning_part events, text and a call; ends with response.completed', async () => {
    const events = await responsesStream({
      instructions: script({ rounds: [{ reasoning: 'think it over', text: 'ok then', tool_calls: [{ name: 'f', arguments: { a: 1 } }] }] }),
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'go' }] }],
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
    });
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.reasoning_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[3]).toMatchObject({ output_index: 0, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    const msg = events[10].item;
    expect(msg).toEqual({ id: expect.stringMatching(HEX32), type: 'message', role: 'assistant', content: [], status: 'in_progress' });
    const fc = events[17].item;
    expect(fc).toEqual({
      id: expect.stringMatching(HEX32),
      type: 'function_call',
      call_id: expect.stringMatching(/^call_[0-9a-f]{32}$/),
      name: 'f',
      arguments: '',
      status: 'in_progress',
    });
    expect(events[19]).toMatchObject({ item_id: fc.id, output_index: 2, arguments: '{"a":1}', name: 'f' });
    const done = events.at(-1).response;
    expect(done.status).toBe('completed');
    expect(done.output.map((i: any) => i.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(done.output[1].content).toEqual([{ type: 'output_text', text: 'ok then', annotations: [] }]);
    expect(done.usage).toEqual({
      input_tokens: expect.any(Number),
      output_tokens: 6,
      total_tokens: done.usage.input_tokens + 6,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 3 },
    });
  });

  it('reports max_output_tokens as status incomplete inside response.completed', async () => {
    const events = await responsesStream({ input: 'one two three four five', max_output_tokens: 2 });
    const last = events.at(-1);
    expect(last.type).toBe('response.completed');
    expect(last.response.status).toBe('incomplete');
    expect(last.response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(last.response.output[0].content[0].text).toBe('You said:'); // 2 pieces: "You", " said:"
    expect(events.filter((e) => e.type === 'response.completed')).toHaveLength(1);
  });

  it('counts function_call groups as one assistant turn, and answers non-stream', async () => {
    const s = { rounds: [{ text: 'r0' }, { text: 'r1' }, { text: 'r2' }] };
    const body = await json(await post('/responses', {
      model: 'm',
      input: [
        { type: 'message', role: 'user', content: `q\n${script(s)}` },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'let me check' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'x' },
        { type: 'function_call_output', call_id: 'c2', output: 'y' },
      ],
    }));
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'm', incomplete_details: null });
    expect(body.output).toEqual([
      { id: expect.stringMatching(HEX32), type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'r1', annotations: [] }], status: 'completed' },
    ]);
  });

  it('cuts a responses stream with an error event', async () => {
    const events = await responsesStream({ input: script({ rounds: [{ text: 'a b', error_after_chunks: 3 }] }) });
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'error']);
    expect(events[3]).toMatchObject({ message: 'simulated mid-stream error', sequence_number: 3 });
  });
});

describe('simulator: max_model_len and script alternatives', () => {
  it('lists max_model_len and refuses a longer prompt with vLLM’s 400', async () => {
    const small = await startSimulator({ port: 0, maxModelLen: 50 });
    try {
      const listed = await json(await fetch(`${small.url}/models`));
      expect(listed.data[0].max_model_len).toBe(50);
      const refuse = await fetch(`${small.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'word '.repeat(100) }] }),
      });
      expect(refuse.status).toBe(400);
      const body = await json(refuse);
      expect(body.error.message).toBe("This model's maximum context length is 50 tokens. However, your request has 125 input tokens. Please reduce the length of the input messages.");
      const withCompletion = await fetch(`${small.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', max_tokens: 40, messages: [{ role: 'user', content: 'word '.repeat(10) }] }),
      });
      expect((await json(withCompletion)).error.message).toMatch(/you requested 53 tokens \(13 in the messages, 40 in the completion\)/);
      const fits = await fetch(`${small.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(fits.status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('`when` answers a last user message containing a string with its own rounds (the script line itself does not count)', async () => {
    const s = { rounds: [{ text: 'main round' }], when: [{ user_contains: 'SUMMARIZE NOW', rounds: [{ text: 'a summary' }] }] };
    const answer = async (messages: unknown[]) => (await json(await post('/chat/completions', { model: 'm', messages }))).choices[0].message.content;
    expect(await answer([userScript(s)])).toBe('main round');
    expect(await answer([userScript(s), { role: 'assistant', content: 'main round' }, { role: 'user', content: 'please SUMMARIZE NOW' }])).toBe('a summary');
    const bad = await post('/chat/completions', { model: 'm', messages: [userScript({ rounds: [], when: [{ rounds: [] }] })] });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.message).toContain('when[0] must be');
  });
});

describe('simulator: request log', () => {
  it('keeps the newest bodies within its byte budget and the metadata of every request', async () => {
    const small = await startSimulator({ maxLoggedBodyBytes: 10_000 });
    try {
      const text = 'x'.repeat(4_000);
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${small.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `${i} ${text}` }] }) });
        expect(res.status).toBe(200);
        await res.text();
      }
      expect(small.requests).toHaveLength(3);
      // ≈ 4 KB each: the newest two fit in 10,000 bytes, the oldest lost its body only
      expect(small.requests[0].body).toBeNull();
      expect(small.requests[0].path).toBe('/v1/chat/completions');
      expect(small.requests.slice(1).map((r) => r.body.messages[0].content.slice(0, 2))).toEqual(['1 ', '2 ']);
    } finally {
      await small.close();
    }
  });
});
