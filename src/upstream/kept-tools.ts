import type { ChatRequest } from '../protocol/chat.js';
import { KeptJson } from '../util/kept-json.js';
import { utf8Bytes } from '../util/utf8.js';

type ChatTools = NonNullable<ChatRequest['tools']>;

/**
 * Tool lists kept: a few clients each resending one list (Codex: 9–12 tools, ≈ 18 KB, on every
 * request; a gateway tool loop: every round). 32 lists of ≤ 512 KB at most.
 */
const kept = new KeptJson(utf8Bytes, 32, 512 * 1024);

/**
 * The bytes of lists of kept functions (frozen: `tools/kept-functions.ts`), by the first of them:
 * a resent tool list declares the same functions every request, found here by reference.
 */
const byFunctions = new WeakMap<object, { functions: readonly unknown[]; bytes: Buffer }>();

/** The JSON bytes of an upstream request's `tools` array, exactly `JSON.stringify(tools)`. */
export function keptToolsBytes(tools: ChatTools): Buffer {
  const first = tools[0]?.function;
  const listed = first !== undefined && Object.isFrozen(first) ? byFunctions.get(first) : undefined;
  if (listed !== undefined && sameFunctions(tools, listed.functions)) return listed.bytes;
  let key = '';
  for (const tool of tools) key += `${tool.function?.name}\u0000`;
  const bytes = kept.get(key, tools);
  if (first !== undefined && tools.every((tool) => tool.type === 'function' && Object.isFrozen(tool.function))) byFunctions.set(first, { functions: tools.map((tool) => tool.function), bytes });
  return bytes;
}

/** Whether `tools` are `{type: 'function', function}` entries (as the chat request makes them) of exactly `functions`. */
function sameFunctions(tools: ChatTools, functions: readonly unknown[]): boolean {
  if (tools.length !== functions.length) return false;
  for (let i = 0; i < tools.length; i++) if (tools[i].type !== 'function' || tools[i].function !== functions[i]) return false;
  return true;
}
