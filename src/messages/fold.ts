import { INPUT_JSON_BLOCKS, type ContentBlock, type MessageObject, type MessagesStreamEvent } from '../protocol/messages.js';

/**
 * The blocking answer is the fold of the Messages stream — the one accumulator (architecture.md
 * §5). It applies events exactly as the SDK's `MessageStream` does, so `finalMessage()` of a
 * stream and the blocking body of the same turn are equal.
 */
export class MessageFold {
  private message: MessageObject | null = null;
  /** Raw `input_json_delta` text per block index, parsed when the block stops. */
  private readonly inputJson = new Map<number, string>();
  private failure: { type: string; message: string } | null = null;

  push(event: MessagesStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.message = structuredClone(event.message);
        return;
      case 'content_block_start':
        this.message!.content.push({ ...event.content_block } as ContentBlock);
        return;
      case 'content_block_delta': {
        const block = this.message!.content[event.index] as ContentBlock & Record<string, any>;
        const delta = event.delta;
        if (delta.type === 'text_delta' && block.type === 'text') block.text += delta.text;
        else if (delta.type === 'citations_delta' && block.type === 'text') block.citations = [...(block.citations ?? []), delta.citation];
        else if (delta.type === 'thinking_delta' && block.type === 'thinking') block.thinking += delta.thinking;
        else if (delta.type === 'signature_delta' && block.type === 'thinking') block.signature = delta.signature;
        else if (delta.type === 'input_json_delta' && INPUT_JSON_BLOCKS.has(block.type)) this.inputJson.set(event.index, (this.inputJson.get(event.index) ?? '') + delta.partial_json);
        return;
      }
      case 'content_block_stop': {
        const json = this.inputJson.get(event.index);
        if (json !== undefined) {
          (this.message!.content[event.index] as { input: unknown }).input = parseInput(json);
          this.inputJson.delete(event.index);
        }
        return;
      }
      case 'message_delta': {
        const message = this.message!;
        message.stop_reason = event.delta.stop_reason;
        message.stop_sequence = event.delta.stop_sequence;
        message.stop_details = event.delta.stop_details;
        message.usage.output_tokens = event.usage.output_tokens;
        // cumulative totals: overwrite when present, never add (as the SDK)
        if (event.usage.input_tokens != null) message.usage.input_tokens = event.usage.input_tokens;
        if (event.usage.cache_creation_input_tokens != null) message.usage.cache_creation_input_tokens = event.usage.cache_creation_input_tokens;
        if (event.usage.cache_read_input_tokens != null) message.usage.cache_read_input_tokens = event.usage.cache_read_input_tokens;
        if (event.usage.server_tool_use != null) message.usage.server_tool_use = event.usage.server_tool_use;
        return;
      }
      case 'error':
        this.failure = event.error;
        return;
      default:
        return;
    }
  }

  /** The message so far (complete after `message_stop`). */
  get result(): MessageObject | null {
    return this.message;
  }

  /** The `error` event's body, when the turn failed after it started. */
  get error(): { type: string; message: string } | null {
    return this.failure;
  }
}

function parseInput(json: string): unknown {
  if (json === '') return {};
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}
