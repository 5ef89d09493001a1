import type { ChatRequest } from '../protocol/chat.js';
import { KeptJson } from '../util/kept-json.js';
import { utf8Bytes } from '../util/utf8.js';

type ChatTools = NonNullable<ChatRequest['tools']>;

/**
 * Tool lists kept: a few clients each resending one list (Codex: 9–12 tools, ≈ 18 KB, on every
 * request; a gateway tool loop: every round). 32 lists of ≤ 512 KB at most.
 */
const kept = new KeptJson(utf8Bytes, 32, 512 * 1024);

/** The JSON bytes of an upstream request's `tools` array, exactly `JSON.stringify(tools)`. */
export function keptToolsBytes(tools: ChatTools): Buffer {
  let key = '';
  for (const tool of tools) key += `${tool.function?.name}\u0000`;
  return kept.get(key, tools);
}
