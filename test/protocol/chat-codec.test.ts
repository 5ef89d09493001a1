import { describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/turn.js';
import { ChatStreamDecoder, encodeChatMessages, encodeChatRequest, type ChatChunk } from '../../src/protocol/chat.js';
import type { ModelItem, ModelRequest, RawEvent } from '../../src/protocol/model.js';
import type { ResponseStore } from '../../src/store/store.js';
import type { UpstreamClient } from '../../src/upstream/client.js';

const text = (t: string) => [{ type: 'text' as const, text: t }];
const msg = (role: 'system' | 'developer' | 'user' | 'assistant', t: string): ModelItem => ({ type: 'message', role, content: text(t) });
const call = (callId: string, name: string, args: string): ModelItem => ({ type: 'function_call', callId, name, arguments: args });
const output = (callId: string, out: string): ModelItem => ({ type: 'function_call_output', callId, output: out });

describe('encodeChatMessages', () => {
  it('merges instructions and leading developer/system messages into one system message', () => {
    const items: ModelItem[] = [msg('system', 'You are terse.'), msg('developer', 'Answer in French.'), msg('system', 'Never guess.'), msg('user', 'Hi')];
    expect(encodeChatMessages(items, 'none')).toEqual([
      { role: 'system', content: 'You are terse.\n\nAnswer in French.\n\nNever guess.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('keeps a later developer message as its own system message', () => {
    expect(encodeChatMessages([msg('developer', 'A'), msg('user', 'q'), msg('developer', 'B'), msg('user', 'r')], 'none')).toEqual([
      { role: 'system', content: 'A' },
      { role: 'user', content: 'q' },
      { role: 'system', content: 'B' },
      { role: 'user', content: 'r' },
    ]);
  });

  it('emits a system message when the conversation is only instructions', () => {
    expect(encodeChatMessages([msg('system', 'Only this.')], 'none')).toEqual([{ role: 'system', content: 'Only this.' }]);
    expect(encodeChatMessages([], 'none')).toEqual([]);
  });

  it('groups consecutive function calls into one assistant message; tool messages follow, paired by call_id', () => {
    const items: ModelItem[] = [
      msg('user', 'Weather and time in Oslo?'),
      call('call_a', 'get_weather', '{"city":"Oslo"}'),
      call('call_b', 'get_time', '{"tz":"Europe/Oslo"}'),
      output('call_a', '{"temp":3}'),
      output('call_b', '14:05'),
      msg('assistant', 'It is 3 °C and 14:05.'),
    ];
    expect(encodeChatMessages(items, 'none')).toEqual([
      { role: 'user', content: 'Weather and time in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"temp":3}' },
      { role: 'tool', tool_call_id: 'call_b', content: '14:05' },
      { role: 'assistant', content: 'It is 3 °C and 14:05.' },
    ]);
  });

  it("orders tool messages by the calls' order even when the outputs arrive out of order (templates pair by position)", () => {
    // chat-completions-upstream.md §2: "one message per call, directly after the assistant message;
    // keep the calls' order (some templates pair by position)". Responses clients pair by call_id
    // and may send outputs in completion order.
    const items: ModelItem[] = [msg('user', 'go'), call('call_a', 'f', '{}'), call('call_b', 'g', '{}'), output('call_b', 'B'), output('call_a', 'A')];
    expect(encodeChatMessages(items, 'none').slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b', content: 'B' },
    ]);
  });

  it('starts a new assistant message for calls after tool outputs (a second round)', () => {
    const items: ModelItem[] = [msg('user', 'go'), call('c1', 'f', '{}'), output('c1', 'one'), call('c2', 'f', '{"n":2}'), output('c2', 'two')];
    expect(encodeChatMessages(items, 'none')).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'f', arguments: '{"n":2}' } }] },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
    ]);
  });

  it('merges an assistant text message and the calls that follow into one assistant message', () => {
    const items: ModelItem[] = [msg('user', 'Fix it'), msg('assistant', 'Let me look.'), call('call_1', 'read_file', '{"path":"a.ts"}'), call('call_2', 'read_file', '{"path":"b.ts"}'), output('call_1', 'A'), output('call_2', 'B')];
    expect(encodeChatMessages(items, 'none')).toEqual([
      { role: 'user', content: 'Fix it' },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
          { id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'A' },
      { role: 'tool', tool_call_id: 'call_2', content: 'B' },
    ]);
  });

  it('does not merge calls into an assistant message separated by a user message', () => {
    const items: ModelItem[] = [msg('assistant', 'Hello.'), msg('user', 'weather?'), call('c', 'get_weather', '{}')];
    expect(encodeChatMessages(items, 'none')).toEqual([
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
    ]);
  });

  it('turns images into image_url parts (detail only when given) and keeps text-only content a string', () => {
    const items: ModelItem[] = [
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', url: 'https://example.com/a.png' },
          { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
        ],
      },
      { type: 'message', role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
    ];
    expect(encodeChatMessages(items, 'none')).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
        ],
      },
      // several text parts are joined with newlines, as vLLM flattens list content
      { role: 'user', content: 'one\ntwo' },
    ]);
  });

  describe('reasoning replay', () => {
    const items: ModelItem[] = [
      msg('user', 'q1'),
      { type: 'reasoning', text: 'I need the weather.' },
      call('c1', 'get_weather', '{"city":"Oslo"}'),
      output('c1', 'sunny'),
      { type: 'reasoning', text: 'It is sunny.' },
      msg('assistant', 'Sunny.'),
    ];

    it("'reasoning_content' attaches the preceding reasoning to the assistant message", () => {
      expect(encodeChatMessages(items, 'reasoning_content')).toEqual([
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: null, reasoning_content: 'I need the weather.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        { role: 'assistant', content: 'Sunny.', reasoning_content: 'It is sunny.' },
      ]);
    });

    it("'reasoning' uses vLLM's field name", () => {
      const messages = encodeChatMessages(items, 'reasoning');
      expect(messages[1]).toEqual({ role: 'assistant', content: null, reasoning: 'I need the weather.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] });
      expect(messages[3]).toEqual({ role: 'assistant', content: 'Sunny.', reasoning: 'It is sunny.' });
    });

    it("'none' drops reasoning", () => {
      const messages = encodeChatMessages(items, 'none');
      expect(messages[1]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] });
      expect(messages[3]).toEqual({ role: 'assistant', content: 'Sunny.' });
    });

    it('joins consecutive reasoning items and attaches them to the assistant message that follows (text, then calls)', () => {
      const turn: ModelItem[] = [msg('user', 'q'), { type: 'reasoning', text: 'a' }, { type: 'reasoning', text: 'b' }, msg('assistant', 'Checking.'), call('c', 'f', '{}')];
      expect(encodeChatMessages(turn, 'reasoning_content')[1]).toEqual({
        role: 'assistant',
        content: 'Checking.',
        reasoning_content: 'ab',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      });
    });
  });
});

describe('encodeChatRequest', () => {
  const weather = { name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true };

  it('encodes every sampling and tool field', () => {
    const req: ModelRequest = {
      model: 'Qwen/Qwen3-8B',
      items: [msg('system', 'Be brief.'), msg('user', 'Weather in Oslo?')],
      tools: [weather],
      toolChoice: { name: 'get_weather' },
      parallelToolCalls: false,
      maxOutputTokens: 512,
      temperature: 0.2,
      topP: 0.9,
      reasoningEffort: 'low',
      responseFormat: { type: 'json_schema', name: 'weather', schema: { type: 'object', properties: { temp: { type: 'number' } } }, strict: true },
    };
    expect(encodeChatRequest(req)).toEqual({
      model: 'Qwen/Qwen3-8B',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Oslo?' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: weather }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      max_tokens: 512,
      temperature: 0.2,
      top_p: 0.9,
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: { type: 'object', properties: { temp: { type: 'number' } } }, strict: true } },
    });
  });

  it('omits everything optional; tool_choice/parallel_tool_calls only with tools', () => {
    expect(encodeChatRequest({ model: 'm', items: [msg('user', 'hi')], tools: [], toolChoice: 'none', parallelToolCalls: true })).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('passes string tool choices through and json_object as is', () => {
    const body = encodeChatRequest({ model: 'm', items: [msg('user', 'hi')], tools: [weather], toolChoice: 'required', responseFormat: { type: 'json_object' }, temperature: 0 });
    expect(body.tool_choice).toBe('required');
    expect(body.response_format).toEqual({ type: 'json_object' });
    expect(body.temperature).toBe(0);
  });

  it('passes reasoningReplay down to the messages', () => {
    const body = encodeChatRequest({ model: 'm', items: [msg('user', 'q'), { type: 'reasoning', text: 'think' }, msg('assistant', 'a'), msg('user', 'q2')], tools: [] }, 'reasoning_content');
    expect(body.messages[1]).toEqual({ role: 'assistant', content: 'a', reasoning_content: 'think' });
  });

  it('from a Responses request: instructions + developer merged, text.format json_schema → response_format, named tool_choice', async () => {
    const engine = new Engine(
      {} as UpstreamClient,
      {} as ResponseStore,
      { executionFor: () => undefined, logOnce: () => {} },
      { maxToolRounds: 8, maxConcurrentGatewayCalls: 4 },
      { info: () => {}, warn: () => {}, error: () => {} },
    );
    const turn = await engine.prepare({
      model: 'Qwen/Qwen3-8B',
      instructions: 'You are a weather bot.',
      input: [
        { role: 'developer', content: 'Use metric units.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Oslo?' }, { type: 'input_image', image_url: 'https://example.com/oslo.jpg', detail: 'high' }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"temp":3}' },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true }],
      tool_choice: { type: 'function', name: 'get_weather' },
      text: { format: { type: 'json_schema', name: 'report', schema: { type: 'object', properties: { summary: { type: 'string' } } }, strict: true } },
      max_output_tokens: 300,
      temperature: 0.3,
      top_p: 0.95,
      reasoning: { effort: 'high' },
    });
    const body = encodeChatRequest({ ...turn.base, items: turn.conversation, tools: turn.tools, toolChoice: turn.toolChoice }, 'reasoning_content');
    expect(body).toEqual({
      model: 'Qwen/Qwen3-8B',
      messages: [
        { role: 'system', content: 'You are a weather bot.\n\nUse metric units.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Oslo?' },
            { type: 'image_url', image_url: { url: 'https://example.com/oslo.jpg', detail: 'high' } },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: true,
      max_tokens: 300,
      temperature: 0.3,
      top_p: 0.95,
      reasoning_effort: 'high',
      response_format: { type: 'json_schema', json_schema: { name: 'report', schema: { type: 'object', properties: { summary: { type: 'string' } } }, strict: true } },
    });
  });
});

describe('ChatStreamDecoder', () => {
  function decode(chunks: ChatChunk[]): RawEvent[] {
    let n = 0;
    const decoder = new ChatStreamDecoder(() => `call_generated_${++n}`);
    const out: RawEvent[] = [];
    for (const chunk of chunks) decoder.push(chunk, out);
    return out;
  }
  const delta = (d: NonNullable<NonNullable<ChatChunk['choices']>[number]['delta']>, finish: string | null = null): ChatChunk => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

  it('buffers an argument fragment that arrives before the name', () => {
    expect(
      decode([
        delta({ tool_calls: [{ index: 0, id: 'chatcmpl-tool-1', function: { arguments: '{"city"' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: ': "Oslo"' } }] }),
        delta({ tool_calls: [{ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '}' } }] }, 'tool_calls'),
      ]),
    ).toEqual([
      { kind: 'tool_call_start', index: 0, callId: 'chatcmpl-tool-1', name: 'get_weather' },
      { kind: 'tool_call_args', index: 0, delta: '{"city": "Oslo"' },
      { kind: 'tool_call_args', index: 0, delta: '}' },
      { kind: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('generates an id (through the injected factory) for a call without one', () => {
    expect(
      decode([
        delta({ tool_calls: [{ index: 0, function: { name: 'get_weather', arguments: '{}' } }] }),
        delta({ tool_calls: [{ index: 1, id: null, function: { name: 'get_time', arguments: '{}' } }] }),
        delta({}, 'tool_calls'),
      ]),
    ).toEqual([
      { kind: 'tool_call_start', index: 0, callId: 'call_generated_1', name: 'get_weather' },
      { kind: 'tool_call_args', index: 0, delta: '{}' },
      { kind: 'tool_call_start', index: 1, callId: 'call_generated_2', name: 'get_time' },
      { kind: 'tool_call_args', index: 1, delta: '{}' },
      { kind: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('keeps the first id and name of a call (later repeats are ignored)', () => {
    expect(
      decode([
        delta({ tool_calls: [{ index: 0, id: 'first', function: { name: 'f', arguments: '{"a"' } }] }),
        delta({ tool_calls: [{ index: 0, id: 'second', function: { name: 'f', arguments: ':1}' } }] }),
      ]),
    ).toEqual([
      { kind: 'tool_call_start', index: 0, callId: 'first', name: 'f' },
      { kind: 'tool_call_args', index: 0, delta: '{"a"' },
      { kind: 'tool_call_args', index: 0, delta: ':1}' },
    ]);
  });

  it('flushes a call that never got a name at finish, as an unnamed call', () => {
    expect(decode([delta({ tool_calls: [{ index: 0, id: 'x', function: { arguments: '{"q":1}' } }] }), delta({}, 'tool_calls')])).toEqual([
      { kind: 'tool_call_start', index: 0, callId: 'x', name: '' },
      { kind: 'tool_call_args', index: 0, delta: '{"q":1}' },
      { kind: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('turns an error chunk into a raw error event (string codes kept, vLLM integer codes dropped)', () => {
    expect(decode([delta({ content: 'par' }), { error: { message: 'CUDA out of memory', type: 'InternalServerError', code: 500 } }])).toEqual([
      { kind: 'text', delta: 'par' },
      { kind: 'error', message: 'CUDA out of memory', code: undefined },
    ]);
    expect(decode([{ error: { message: 'overloaded', code: 'server_overloaded' } }])).toEqual([{ kind: 'error', message: 'overloaded', code: 'server_overloaded' }]);
    expect(decode([{ error: {} }])).toEqual([{ kind: 'error', message: 'upstream error', code: undefined }]);
  });

  it('maps finish reasons (function_call → tool_calls, unknown → other)', () => {
    const reasons = ['stop', 'length', 'tool_calls', 'function_call', 'content_filter', 'abort', 'eos'].map((r) => decode([delta({}, r)]));
    expect(reasons).toEqual([
      [{ kind: 'finish', reason: 'stop' }],
      [{ kind: 'finish', reason: 'length' }],
      [{ kind: 'finish', reason: 'tool_calls' }],
      [{ kind: 'finish', reason: 'tool_calls' }],
      [{ kind: 'finish', reason: 'content_filter' }],
      [{ kind: 'finish', reason: 'other' }],
      [{ kind: 'finish', reason: 'other' }],
    ]);
  });

  it('reports sawFinish', () => {
    const decoder = new ChatStreamDecoder(() => 'id');
    const out: RawEvent[] = [];
    decoder.push(delta({ content: 'x' }), out);
    expect(decoder.sawFinish).toBe(false);
    decoder.push(delta({}, 'stop'), out);
    expect(decoder.sawFinish).toBe(true);
  });

  it('reads reasoning, reasoning_content, content and refusal; applies a delta before the finish of its chunk', () => {
    expect(
      decode([
        delta({ reasoning: 'r1' }),
        delta({ reasoning_content: 'r2' }),
        delta({ content: 'c', refusal: null }),
        delta({ refusal: 'no' }, 'stop'),
      ]),
    ).toEqual([
      { kind: 'reasoning', delta: 'r1' },
      { kind: 'reasoning', delta: 'r2' },
      { kind: 'text', delta: 'c' },
      { kind: 'refusal', delta: 'no' },
      { kind: 'finish', reason: 'stop' },
    ]);
  });

  it('reads usage wherever it comes (also on a content chunk), defaulting missing details to 0', () => {
    expect(
      decode([
        { choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }], usage: { prompt_tokens: 5, completion_tokens: 1 } },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 1 } } },
        { choices: [], usage: null },
      ]),
    ).toEqual([
      { kind: 'text', delta: 'a' },
      { kind: 'usage', usage: { inputTokens: 5, outputTokens: 1, cachedTokens: 0, reasoningTokens: 0 } },
      { kind: 'usage', usage: { inputTokens: 5, outputTokens: 2, cachedTokens: 4, reasoningTokens: 1 } },
    ]);
  });
});
