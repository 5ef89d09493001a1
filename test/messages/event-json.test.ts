// messagesEventJson (issue #16): a token's content_block_delta written from its fields is exactly
// JSON.stringify of the event, for every delta kind and any text; other events are stringified.
import { describe, expect, it } from 'vitest';
import { messagesEventJson } from '../../src/messages/event-json.js';
import type { MessagesStreamEvent } from '../../src/protocol/messages.js';

const TEXTS = ['', 'Hello', ' "quoted" \\ back', 'line\nbreak\ttab', 'ünïcödé 🙂', '\u2028\u2029', '\u0000\u001f', '\ud83d', 'x'.repeat(100)];

describe('messagesEventJson', () => {
  it('writes text, thinking and input_json deltas exactly as JSON.stringify', () => {
    for (const text of TEXTS) {
      for (const index of [0, 7, 12345]) {
        const events: MessagesStreamEvent[] = [
          { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
          { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: text } },
          { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: text } },
        ];
        for (const event of events) expect(messagesEventJson(event)).toBe(JSON.stringify(event));
      }
    }
  });

  it('stringifies every other event as it is', () => {
    const events = [
      { type: 'content_block_delta', index: 1, delta: { type: 'signature_delta', signature: 'c2ln' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'citations_delta', citation: { type: 'web_search_result_location', url: 'https://a.example', title: null, encrypted_index: 'x', cited_text: 'y' } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_stop' },
    ] as MessagesStreamEvent[];
    for (const event of events) expect(messagesEventJson(event)).toBe(JSON.stringify(event));
  });
});
