// Upstream chunks checked where they are parsed (issue #10): what real servers send passes
// unchanged (nulls included), a field the decoders read in the wrong shape is named.
import { describe, expect, it } from 'vitest';
import { ChatStreamDecoder } from '../../src/protocol/chat.js';
import type { RawEvent } from '../../src/protocol/model.js';
import { checkChatChunk, checkResponsesEvent, MalformedChunkError } from '../../src/protocol/upstream-chunks.js';

function problem(check: (value: unknown) => unknown, value: unknown): string {
  try {
    check(value);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedChunkError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(value)}`);
}

describe('checkChatChunk', () => {
  it('passes the chunks vLLM, llama.cpp and Ollama send (nulls where fields are unset)', () => {
    const chunks = [
      { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: null, reasoning_content: 'hm', tool_calls: null }, finish_reason: null, stop_reason: null }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: null } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop', stop_reason: 128001 }] },
      { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, prompt_tokens_details: null } },
      { error: { message: 'boom', code: 500 } },
    ];
    for (const chunk of chunks) expect(checkChatChunk(chunk)).toBe(chunk);
  });

  it('an error sent as a bare string is an upstream error, not a malformed chunk', () => {
    const out: RawEvent[] = [];
    new ChatStreamDecoder(() => 'id').push(checkChatChunk({ error: 'model overloaded' }), out);
    expect(out).toEqual([{ kind: 'error', message: 'model overloaded' }]);
  });

  it('names the first bad field', () => {
    expect(problem(checkChatChunk, null)).toBe("'(chunk)' is not a JSON object");
    expect(problem(checkChatChunk, { choices: 'x' })).toBe("'choices' is not an array");
    expect(problem(checkChatChunk, { choices: [{ delta: [] }] })).toBe("'choices[0].delta' is not an object");
    expect(problem(checkChatChunk, { choices: [{ finish_reason: 1 }] })).toBe("'choices[0].finish_reason' is not a string");
    expect(problem(checkChatChunk, { choices: [{ delta: { reasoning: {} } }] })).toBe("'choices[0].delta.reasoning' is not a string");
    expect(problem(checkChatChunk, { choices: [{ delta: { tool_calls: [null] } }] })).toBe("'choices[0].delta.tool_calls[0]' is not an object");
    expect(problem(checkChatChunk, { choices: [{ delta: { tool_calls: [{ index: 1.5 }] } }] })).toBe("'choices[0].delta.tool_calls[0].index' is not an integer");
    expect(problem(checkChatChunk, { choices: [{ delta: { tool_calls: [{ index: 0, function: { name: ['f'] } }] } }] })).toBe("'choices[0].delta.tool_calls[0].function.name' is not a string");
    expect(problem(checkChatChunk, { usage: { prompt_tokens: '3' } })).toBe("'usage.prompt_tokens' is not a number");
    expect(problem(checkChatChunk, { error: 5 })).toBe("'error' is not an object or a string");
  });
});

describe('checkResponsesEvent', () => {
  it('passes vLLM Responses events', () => {
    const events = [
      { type: 'response.created', response: { id: 'r', status: 'in_progress', usage: null } },
      { type: 'response.output_item.added', output_index: 1, item: { type: 'function_call', call_id: 'c', name: 'f', arguments: '' } },
      { type: 'response.output_item.added', output_index: 0, item: { type: 'message', role: 'assistant', content: [] } },
      { type: 'response.function_call_arguments.delta', output_index: 1, delta: '{"a"' },
      { type: 'response.completed', response: { status: 'completed', usage: { input_tokens: 1, output_tokens: 2, input_tokens_details: null } } },
      { type: 'error', message: 'x', code: 429 },
    ];
    for (const event of events) expect(checkResponsesEvent(event)).toBe(event);
  });

  it('names the first bad field', () => {
    expect(problem(checkResponsesEvent, [])).toBe("'(event)' is not a JSON object");
    expect(problem(checkResponsesEvent, { type: 1 })).toBe("'type' is not a string");
    expect(problem(checkResponsesEvent, { type: 'response.output_text.delta', delta: 1 })).toBe("'delta' is not a string");
    expect(problem(checkResponsesEvent, { type: 'response.output_item.added', item: { type: 'function_call', name: 'f', arguments: {} } })).toBe("'item.arguments' is not a string");
    expect(problem(checkResponsesEvent, { type: 'response.completed', response: { usage: { output_tokens: null, input_tokens: 'many' } } })).toBe("'response.usage.input_tokens' is not a number");
    expect(problem(checkResponsesEvent, { type: 'response.failed', response: { error: 'bad' } })).toBe("'response.error' is not an object");
  });
});
