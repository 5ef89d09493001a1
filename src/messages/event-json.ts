import type { MessagesStreamEvent } from '../protocol/messages.js';
import { jsonString } from '../util/json.js';

/**
 * Exactly `JSON.stringify(event)`. A token's `content_block_delta` — the event of almost every
 * line of a Messages stream — is written from its few fields, as the Responses side writes its
 * deltas (`ResponseAccumulator.emitDelta`), not walked as an object.
 */
export function messagesEventJson(event: MessagesStreamEvent): string {
  if (event.type !== 'content_block_delta') return JSON.stringify(event);
  const head = `{"type":"content_block_delta","index":${event.index},"delta":{"type":"${event.delta.type}",`;
  switch (event.delta.type) {
    case 'text_delta':
      return `${head}"text":${jsonString(event.delta.text)}}}`;
    case 'thinking_delta':
      return `${head}"thinking":${jsonString(event.delta.thinking)}}}`;
    case 'input_json_delta':
      return `${head}"partial_json":${jsonString(event.delta.partial_json)}}}`;
    default:
      return JSON.stringify(event);
  }
}
