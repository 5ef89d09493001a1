import type { ChatRequest } from '../protocol/chat.js';
import { KeptJson } from '../util/kept-json.js';
import { isShared, KeptLists } from '../util/kept-runs.js';
import { utf8Bytes } from '../util/utf8.js';

type ChatTools = NonNullable<ChatRequest['tools']>;

/**
 * Tool lists kept: a few clients each resending one list (Codex: 9–12 tools, ≈ 18 KB, on every
 * request; a gateway tool loop: every round). 32 lists of ≤ 512 KB at most.
 */
const kept = new KeptJson(utf8Bytes, 32, 512 * 1024);

/**
 * The bytes of lists of kept functions (frozen: `tools/kept-functions.ts`): a resent tool list
 * declares the same functions every request, found here by reference.
 */
const byFunctions = new KeptLists<Buffer>();

/** The JSON bytes of an upstream request's `tools` array, exactly `JSON.stringify(tools)`. */
export function keptToolsBytes(tools: ChatTools): Buffer {
  // `{type: 'function', function}` entries (as the chat request makes them) stand for their
  // function, any other for none; only a list that may be kept (its functions shared) is looked up
  const functions = isShared(tools.at(-1)?.function) ? tools.map((tool) => (tool.type === 'function' ? tool.function : undefined)) : undefined;
  const listed = functions && byFunctions.find(functions);
  if (listed !== undefined) return listed;
  let key = '';
  for (const tool of tools) key += `${tool.function?.name}\u0000`;
  const bytes = kept.get(key, tools);
  if (functions) byFunctions.keep(functions, bytes);
  return bytes;
}
