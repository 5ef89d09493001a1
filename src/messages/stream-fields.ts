// Fields of the Messages stream the encoder (stream-encoder.ts) derives from the Responses run:
// the stop reason, a thinking block's signature, a citation's opaque index and cited sentence.
import { createHash } from 'node:crypto';
import type { StopReason } from '../protocol/messages.js';

type Json = Record<string, any>;

/**
 * Why the turn stopped, in Messages terms: pending client calls → `tool_use`; the tool-round cap
 * → `pause_turn` (the client sends the conversation back to continue); the token cap →
 * `max_tokens`; a refusal or content filter → `refusal`.
 */
export function stopReasonOf(response: Json, output: Json[], sawRefusal: boolean): StopReason {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    if (reason === 'max_output_tokens') return 'max_tokens';
    if (reason === 'content_filter') return 'refusal';
    return 'pause_turn';
  }
  if (output.some((item) => item.type === 'function_call' || item.type === 'custom_tool_call')) return 'tool_use';
  return sawRefusal ? 'refusal' : 'end_turn';
}

/**
 * The thinking block's `signature`: Anthropic's is a proof that the thinking is unaltered; ours
 * is a digest of the text — opaque to clients, who pass it back unchanged (we do not require it).
 */
export function thinkingSignature(thinking: string): string {
  return createHash('sha256').update(thinking).digest('base64');
}

/** Opaque fields clients pass back unchanged (`encrypted_content`, `encrypted_index`): here the URL, base64. */
export function opaque(url: string): string {
  return Buffer.from(url, 'utf8').toString('base64');
}

/** The sentence a `[n]` marker at `markerAt` ends: what the answer says the source supports. */
export function citedText(text: string, markerAt: number): string {
  const before = text.slice(0, Math.max(0, markerAt)).trimEnd();
  const boundary = Math.max(before.lastIndexOf('. '), before.lastIndexOf('] '), before.lastIndexOf('\n'));
  return before.slice(boundary + 1).trim().slice(-150);
}
