/**
 * Recorded upstream streams replayed through the pure pipeline (SSE parser → decoder → round
 * translator → accumulator). Every fixture must produce the same public events however its bytes
 * are cut, and each has literal expectations on what the client sees.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RawEvent } from '../../src/protocol/model.js';
import {
  decodeChatRaw,
  decodeResponsesRaw,
  doneItems,
  eventsOfType,
  fixtureBytes,
  joinDeltas,
  oneByteChunks,
  replayChat,
  replayChatSerialized,
  replayRegistry,
  replayResponses,
  splitAt,
  terminalResponse,
  translateSerialized,
  type PublicEvent,
} from '../helpers/replay.js';
import type { ToolRegistry } from '../../src/tools/registry.js';

const registry = replayRegistry();
const FIXTURE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

const CHAT_FIXTURES = [
  'text',
  'tool-call-split',
  'parallel-calls',
  'call-in-one-chunk',
  'reasoning',
  'reasoning-content',
  'usage-last',
  'empty-deltas',
  'whitespace-before-call',
  'length',
  'named-choice-stop',
  'custom-apply-patch',
  'custom-apply-patch-length',
];
const RESPONSES_FIXTURES = ['vllm-text', 'vllm-function-calls', 'vllm-incomplete'];

function listed(dialect: string): string[] {
  return readdirSync(join(FIXTURE_DIR, dialect))
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => f.slice(0, -'.jsonl'.length))
    .sort();
}

it('every fixture on disk is replayed here', () => {
  expect(listed('chat')).toEqual([...CHAT_FIXTURES].sort());
  expect(listed('responses')).toEqual([...RESPONSES_FIXTURES].sort());
});

/** Protocol invariants any public event list must satisfy. */
function checkInvariants(events: readonly PublicEvent[]): void {
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  expect(events[0].type).toBe('response.created');
  expect(events[1].type).toBe('response.in_progress');
  const terminals = events.filter((e) => ['response.completed', 'response.incomplete', 'response.failed'].includes(e.type));
  expect(terminals).toHaveLength(1);
  expect(events[events.length - 1]).toBe(terminals[0]);
  const added = eventsOfType(events, 'response.output_item.added').map((e) => e.output_index);
  const done = eventsOfType(events, 'response.output_item.done').map((e) => e.output_index);
  expect(added).toEqual(added.map((_, i) => i));
  expect([...done].sort()).toEqual(added);
  // the terminal snapshot holds exactly the done items
  expect(terminalResponse(events).output).toEqual(doneItems(events));
  for (const item of doneItems(events)) {
    if (item.type === 'message') {
      for (const [i, part] of (item.content as PublicEvent[]).entries()) {
        const deltas = eventsOfType(events, 'response.output_text.delta').filter((e) => e.item_id === item.id && e.content_index === i);
        expect(deltas.map((e) => e.delta).join('')).toBe(part.text);
      }
    } else if (item.type === 'function_call') {
      expect(joinDeltas(events, 'response.function_call_arguments.delta', item.id)).toBe(item.arguments);
    } else if (item.type === 'reasoning') {
      expect(joinDeltas(events, 'response.reasoning_text.delta', item.id)).toBe(item.content[0].text);
    }
  }
}

/**
 * Public events of a chat byte stream. The translation stage is a deterministic function of the
 * raw events (ids are normalized), so its result is memoized by the raw events' JSON: a split
 * that decodes to the same raw events yields the same public events without re-running it,
 * which keeps thousands of replays per fixture fast. Any split that decodes differently is
 * translated afresh.
 */
function publicEventsMemo(registry: ToolRegistry): (bytes: Uint8Array[]) => string {
  const memo = new Map<string, string>();
  return (bytes) => {
    const raw = decodeChatRaw(bytes);
    const key = JSON.stringify(raw);
    let events = memo.get(key);
    if (events === undefined) {
      events = translateSerialized(raw, registry).join('\n');
      memo.set(key, events);
    }
    return events;
  };
}

describe.each(CHAT_FIXTURES)('chat fixture %s: byte-split invariance', (name) => {
  const bytes = fixtureBytes('chat', name);
  let whole: string;
  beforeAll(() => {
    whole = replayChatSerialized([bytes], registry).join('\n');
  });

  it('satisfies the event-stream invariants', () => {
    checkInvariants(replayChat([bytes], registry));
  });

  it('gives the same public events when cut in two at every byte', () => {
    const replay = publicEventsMemo(registry);
    for (let i = 0; i <= bytes.length; i++) {
      const got = replay(splitAt(bytes, i));
      if (got !== whole) expect({ splitAt: i, events: got.split('\n') }).toEqual({ splitAt: i, events: whole.split('\n') });
    }
  });

  it('gives the same public events fed one byte at a time', () => {
    expect(replayChatSerialized(oneByteChunks(bytes), registry).join('\n')).toBe(whole);
  });
});

function replayFixture(name: string): PublicEvent[] {
  return replayChat([fixtureBytes('chat', name)], registry);
}

function messageText(events: readonly PublicEvent[]): string {
  return doneItems(events)
    .filter((i) => i.type === 'message')
    .map((i) => i.content.map((p: PublicEvent) => p.text).join(''))
    .join('');
}

describe('chat fixtures: what the client sees', () => {
  it('text: unicode (CJK, ZWJ emoji, flag, accents) reassembles exactly', () => {
    const events = replayFixture('text');
    const text = 'Hello! Hére is the plan:\n\n1. 你好，世界！\n2. 👩\u200d💻 works from 🇳🇴 (Oslo) — naïve café ✅.';
    expect(eventsOfType(events, 'response.output_text.delta').map((e) => e.delta)).toEqual([
      'Hello', '!', ' Hér', 'e is', ' the plan', ':\n\n', '1. ', '你好', '，世界', '！', '\n2. ', '👩\u200d', '💻',
      ' works', ' from ', '🇳', '🇴', ' (Oslo', ')', ' — ', 'naïve', ' café', ' ✅', '.',
    ]);
    expect(doneItems(events)).toEqual([
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] },
    ]);
    expect(eventsOfType(events, 'response.output_text.done')[0].text).toBe(text);
    const response = terminalResponse(events);
    expect(response.status).toBe('completed');
    expect(response.usage).toEqual({ input_tokens: 31, input_tokens_details: { cached_tokens: 0 }, output_tokens: 27, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 58 });
  });

  it('tool-call-split: one call, arguments reassembled, last fragment from the finish chunk', () => {
    const events = replayFixture('tool-call-split');
    const args = '{"city": "Oslo", "unit": "celsius"}';
    expect(eventsOfType(events, 'response.output_item.added').map((e) => e.item)).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'chatcmpl-tool-6c1e0f9a2b7d4e3f8a5b0c1d2e3f4a5b', name: 'get_weather', arguments: '', status: 'in_progress' },
    ]);
    const deltas = eventsOfType(events, 'response.function_call_arguments.delta').map((e) => e.delta);
    expect(deltas).toEqual(['{"', 'city', '": "', 'Osl', 'o', '", "', 'unit', '": "', 'cel', 'sius', '"}']);
    expect(eventsOfType(events, 'response.function_call_arguments.done')).toEqual([
      { type: 'response.function_call_arguments.done', sequence_number: 14, item_id: 'fc_1', output_index: 0, arguments: args, name: 'get_weather' },
    ]);
    expect(doneItems(events)).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'chatcmpl-tool-6c1e0f9a2b7d4e3f8a5b0c1d2e3f4a5b', name: 'get_weather', arguments: args, status: 'completed' },
    ]);
    expect(terminalResponse(events).usage.total_tokens).toBe(236);
  });

  it('parallel-calls: two calls interleaved by index keep their own arguments', () => {
    const events = replayFixture('parallel-calls');
    expect(doneItems(events)).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'chatcmpl-tool-0a1b2c3d4e5f46a7b8c9d0e1f2a3b4c5', name: 'get_weather', arguments: '{"city": "Tokyo"}', status: 'completed' },
      { type: 'function_call', id: 'fc_2', call_id: 'chatcmpl-tool-f5e4d3c2b1a049f8e7d6c5b4a3f2e1d0', name: 'get_time', arguments: '{"tz": "Asia/Tokyo"}', status: 'completed' },
    ]);
    // deltas are routed to the right item as they arrive
    expect(eventsOfType(events, 'response.function_call_arguments.delta').map((e) => [e.item_id, e.output_index, e.delta])).toEqual([
      ['fc_1', 0, '{"city": '],
      ['fc_2', 1, '{"tz": "Asia/'],
      ['fc_1', 0, '"Tokyo"'],
      ['fc_2', 1, 'Tokyo"'],
      ['fc_1', 0, '}'],
      ['fc_2', 1, '}'],
    ]);
    expect(eventsOfType(events, 'response.output_text.delta')).toEqual([]);
  });

  it('call-in-one-chunk: complete calls in one delta, two in one chunk', () => {
    const events = replayFixture('call-in-one-chunk');
    expect(doneItems(events).map((i) => [i.call_id, i.name, i.arguments, i.status])).toEqual([
      ['chatcmpl-tool-5b0e6d7c8f9a41b2a3c4d5e6f7a8b9c0', 'get_weather', '{"city": "Paris"}', 'completed'],
      ['chatcmpl-tool-7d3c9e1f0a2b44c5b6d7e8f9a0b1c2d3', 'get_time', '{"tz": "Europe/Paris"}', 'completed'],
      ['chatcmpl-tool-e8f7a6b5c4d343e2a1b0c9d8e7f6a5b4', 'get_weather', '{"city": "Lyon"}', 'completed'],
    ]);
    expect(eventsOfType(events, 'response.function_call_arguments.delta').map((e) => [e.item_id, e.delta])).toEqual([
      ['fc_1', '{"city": "Paris"}'],
      ['fc_2', '{"tz": "Europe/Paris"}'],
      ['fc_3', '{"city": "Lyon"}'],
    ]);
  });

  it('reasoning: delta.reasoning becomes a reasoning item closed before the message opens', () => {
    const events = replayFixture('reasoning');
    expect(doneItems(events)).toEqual([
      { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'Okay, the user asks 2+2. That is 4.' }] },
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: '2 + 2 = **4**.', annotations: [], logprobs: [] }] },
    ]);
    const types = events.map((e) => e.type);
    expect(types.indexOf('response.reasoning_text.done')).toBeLessThan(types.indexOf('response.output_text.delta'));
    expect(eventsOfType(events, 'response.output_item.done')[0].item.type).toBe('reasoning');
    expect(terminalResponse(events).usage.output_tokens_details).toEqual({ reasoning_tokens: 12 });
  });

  it('reasoning-content: SGLang reasoning_content (with null fields and usage:null) reads the same', () => {
    const events = replayFixture('reasoning-content');
    expect(doneItems(events).map((i) => [i.type, i.type === 'message' ? i.content[0].text : i.content[0].text])).toEqual([
      ['reasoning', 'Let me recall: Mount Everest is 8,849 m.'],
      ['message', 'Everest is 8,849 m tall.'],
    ]);
    expect(terminalResponse(events).usage).toEqual({ input_tokens: 14, input_tokens_details: { cached_tokens: 0 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 44 });
  });

  it('usage-last: the final choices:[] chunk carries usage, cached and reasoning tokens included', () => {
    const events = replayFixture('usage-last');
    expect(messageText(events)).toBe('Sure.');
    expect(terminalResponse(events).usage).toEqual({
      input_tokens: 1500,
      input_tokens_details: { cached_tokens: 1024 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 1503,
    });
    // usage is only on the terminal response
    expect(events.slice(0, -1).every((e) => e.response === undefined || e.response.usage === null)).toBe(true);
  });

  it('empty-deltas: {} / "" / null / [] deltas produce nothing', () => {
    const events = replayFixture('empty-deltas');
    expect(eventsOfType(events, 'response.output_text.delta').map((e) => e.delta)).toEqual(['Only', ' this', ' text.']);
    expect(doneItems(events)).toEqual([
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Only this text.', annotations: [], logprobs: [] }] },
    ]);
    expect(eventsOfType(events, 'response.content_part.added')).toHaveLength(1);
  });

  it('whitespace-before-call: the "\\n\\n" between reasoning and the call is not a message', () => {
    const events = replayFixture('whitespace-before-call');
    expect(doneItems(events).map((i) => i.type)).toEqual(['reasoning', 'function_call']);
    expect(events.some((e) => e.type.startsWith('response.output_text') || e.type.startsWith('response.content_part.') && e.part?.type === 'output_text')).toBe(false);
    expect(doneItems(events)[1]).toEqual({ type: 'function_call', id: 'fc_1', call_id: 'chatcmpl-tool-9a8b7c6d5e4f43a2b1c0d9e8f7a6b5c4', name: 'list_dir', arguments: '{"path": "src"}', status: 'completed' });
    expect(doneItems(events)[0].content).toEqual([{ type: 'reasoning_text', text: 'I should list the directory first.' }]);
  });

  it('length: open items end incomplete and the response is incomplete (max_output_tokens)', () => {
    const events = replayFixture('length');
    const items = doneItems(events);
    expect(items.map((i) => [i.type, i.status])).toEqual([
      ['reasoning', undefined],
      ['message', 'incomplete'],
    ]);
    expect(messageText(events)).toBe('Once upon a time, in a land');
    const response = terminalResponse(events);
    expect(events[events.length - 1].type).toBe('response.incomplete');
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.completed_at).toBeNull();
    expect(response.usage.total_tokens).toBe(28);
  });

  it('named-choice-stop: a call finished with finish_reason "stop" is still a completed call', () => {
    const events = replayFixture('named-choice-stop');
    expect(doneItems(events)).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'chatcmpl-tool-c0ffee00c0ffee00c0ffee00c0ffee00', name: 'get_weather', arguments: '{"city": "Bergen"}', status: 'completed' },
    ]);
    expect(terminalResponse(events).status).toBe('completed');
  });

  it('custom-apply-patch: input decoded from the JSON escapes, streamed without escaping', () => {
    const events = replayFixture('custom-apply-patch');
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+say "hi" \\ bye café\n*** End Patch';
    expect(patch).toContain('\n');
    expect(patch).toContain('"');
    expect(patch).toContain('\\');
    expect(patch).toContain('\u00e9');
    const deltas = eventsOfType(events, 'response.custom_tool_call_input.delta').map((e) => e.delta);
    expect(deltas.join('')).toBe(patch);
    // each delta is decoded text: no JSON escape ever leaks
    expect(deltas).toEqual(['*** Beg', 'in Patch', '\n*** Add File: a.txt', '\n+say ', '"hi"', ' ', '\\ bye caf', 'é', '\n*** End', ' Patch']);
    expect(eventsOfType(events, 'response.custom_tool_call_input.done').map((e) => e.input)).toEqual([patch]);
    expect(doneItems(events)).toEqual([
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'chatcmpl-tool-a11ce0a11ce0a11ce0a11ce0a11ce0aa', name: 'apply_patch', input: patch, status: 'completed' },
    ]);
    expect(eventsOfType(events, 'response.function_call_arguments.delta')).toEqual([]);
  });

  it('custom-apply-patch-length: a custom call cut off mid-string ends incomplete and its deltas still add up to input', () => {
    const events = replayFixture('custom-apply-patch-length');
    const streamed = '*** Begin Patch\n*** Add File: a.txt\n+say "hi';
    const deltas = eventsOfType(events, 'response.custom_tool_call_input.delta').map((e) => e.delta as string);
    expect(deltas.slice(0, 4)).toEqual(['*** Begin Patch\n', '*** Add File: a.txt\n', '+say "h', 'i']);
    const [item] = doneItems(events);
    expect(item.status).toBe('incomplete');
    expect(terminalResponse(events).incomplete_details).toEqual({ reason: 'max_output_tokens' });
    // The documented invariant of CustomToolCallStream ("deltas always add up to `input`"):
    // the truncated JSON cannot be parsed, and the raw JSON text must not replace the decoded input.
    expect(item.input).toBe(streamed);
    expect(eventsOfType(events, 'response.custom_tool_call_input.done')[0].input).toBe(streamed);
    expect(deltas.join('')).toBe(item.input);
  });
});

// ---------- the Responses dialect (vLLM /v1/responses) ----------

function rawOf(name: string): RawEvent[] {
  return decodeResponsesRaw([fixtureBytes('responses', name)]);
}

describe.each(RESPONSES_FIXTURES)('responses fixture %s: byte-split invariance', (name) => {
  const bytes = fixtureBytes('responses', name);
  let whole: string;
  beforeAll(() => {
    whole = JSON.stringify(decodeResponsesRaw([bytes]));
  });

  it('gives the same raw events when cut in two at every byte', () => {
    for (let i = 0; i <= bytes.length; i++) {
      const got = JSON.stringify(decodeResponsesRaw(splitAt(bytes, i)));
      if (got !== whole) expect({ splitAt: i, raw: JSON.parse(got) }).toEqual({ splitAt: i, raw: JSON.parse(whole) });
    }
  });

  it('gives the same raw events fed one byte at a time', () => {
    expect(JSON.stringify(decodeResponsesRaw(oneByteChunks(bytes)))).toBe(whole);
  });

  it('satisfies the event-stream invariants once translated', () => {
    checkInvariants(replayResponses([bytes], registry));
  });
});

describe('responses fixtures: raw events', () => {
  it('vllm-text: reasoning then text; reasoning_part.* and lifecycle/done events dropped', () => {
    expect(rawOf('vllm-text')).toEqual([
      { kind: 'reasoning', delta: 'The user' },
      { kind: 'reasoning', delta: ' greets' },
      { kind: 'reasoning', delta: ' in Japanese' },
      { kind: 'reasoning', delta: '.' },
      { kind: 'text', delta: 'こんにちは' },
      { kind: 'text', delta: '！' },
      { kind: 'text', delta: ' Nice to' },
      { kind: 'text', delta: ' meet you' },
      { kind: 'text', delta: ' 🙂' },
      { kind: 'usage', usage: { inputTokens: 21, outputTokens: 19, cachedTokens: 16, reasoningTokens: 7 } },
      { kind: 'finish', reason: 'stop' },
    ]);
    const events = replayResponses([fixtureBytes('responses', 'vllm-text')], registry);
    expect(doneItems(events).map((i) => [i.type, i.id, i.content[0].text])).toEqual([
      ['reasoning', 'rs_1', 'The user greets in Japanese.'],
      ['message', 'msg_1', 'こんにちは！ Nice to meet you 🙂'],
    ]);
  });

  it('vllm-function-calls: calls indexed by output_index, upstream call_id kept, finish tool_calls', () => {
    expect(rawOf('vllm-function-calls')).toEqual([
      { kind: 'tool_call_start', index: 0, callId: 'call_8a7b6c5d4e3f42a19b8c7d6e5f4a3b2c', name: 'get_weather' },
      { kind: 'tool_call_args', index: 0, delta: '{"city"' },
      { kind: 'tool_call_args', index: 0, delta: ': "Oslo"' },
      { kind: 'tool_call_args', index: 0, delta: '}' },
      { kind: 'tool_call_start', index: 1, callId: 'call_1b2c3d4e5f6a47b8a9c0d1e2f3a4b5c6', name: 'get_time' },
      { kind: 'tool_call_args', index: 1, delta: '{"tz": ' },
      { kind: 'tool_call_args', index: 1, delta: '"Europe/Oslo"}' },
      { kind: 'usage', usage: { inputTokens: 180, outputTokens: 38, cachedTokens: 0, reasoningTokens: 0 } },
      { kind: 'finish', reason: 'tool_calls' },
    ]);
    const events = replayResponses([fixtureBytes('responses', 'vllm-function-calls')], registry);
    // the bare-UUID upstream item ids never reach the client: the gateway mints its own
    expect(doneItems(events)).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'call_8a7b6c5d4e3f42a19b8c7d6e5f4a3b2c', name: 'get_weather', arguments: '{"city": "Oslo"}', status: 'completed' },
      { type: 'function_call', id: 'fc_2', call_id: 'call_1b2c3d4e5f6a47b8a9c0d1e2f3a4b5c6', name: 'get_time', arguments: '{"tz": "Europe/Oslo"}', status: 'completed' },
    ]);
  });

  it('vllm-incomplete: response.completed with status incomplete is a length finish', () => {
    expect(rawOf('vllm-incomplete')).toEqual([
      { kind: 'text', delta: 'The' },
      { kind: 'text', delta: ' history' },
      { kind: 'text', delta: ' of' },
      { kind: 'text', delta: ' Norway' },
      { kind: 'text', delta: ' begins' },
      { kind: 'usage', usage: { inputTokens: 11, outputTokens: 5, cachedTokens: 0, reasoningTokens: 0 } },
      { kind: 'finish', reason: 'length' },
    ]);
    const events = replayResponses([fixtureBytes('responses', 'vllm-incomplete')], registry);
    expect(events[events.length - 1].type).toBe('response.incomplete');
    expect(doneItems(events).map((i) => [i.type, i.status])).toEqual([['message', 'incomplete']]);
  });
});

describe('chat fixtures: raw decoding', () => {
  it('tool-call-split: the finish chunk flushes its argument fragment before the finish', () => {
    const raw = decodeChatRaw([fixtureBytes('chat', 'tool-call-split')]);
    expect(raw.slice(-3)).toEqual([
      { kind: 'tool_call_args', index: 0, delta: '"}' },
      { kind: 'finish', reason: 'tool_calls' },
      { kind: 'usage', usage: { inputTokens: 212, outputTokens: 24, cachedTokens: 0, reasoningTokens: 0 } },
    ]);
  });

  it('named-choice-stop: finish_reason stop is passed through as stop', () => {
    const raw = decodeChatRaw([fixtureBytes('chat', 'named-choice-stop')]);
    expect(raw.filter((e) => e.kind === 'finish')).toEqual([{ kind: 'finish', reason: 'stop' }]);
  });
});
