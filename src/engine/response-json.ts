import type { ResponseObject } from '../protocol/responses.js';
import { aroundHole, KeptJson } from '../util/kept-json.js';

const TOOLS_HOLE = '"tools":[]';

/**
 * Echoed tool lists kept: the Response echoes the request's `tools` in `response.created` /
 * `in_progress` and the terminal event, and clients resend the same list with every request
 * (Codex: ≈ 18 KB). 32 lists of ≤ 512 K characters at most.
 */
const kept = new KeptJson((json) => json, 32, 512 * 1024);

/**
 * The text of each Response's echoed tool list, by the list: a Response's list is made once
 * (`newResponseObject`) and never changed, and its events serialise it two or three times
 * (`response.created`, the terminal event, a background run's stored terminal event).
 */
const toolsJsonOfList = new WeakMap<readonly unknown[], string>();

/** Exactly `JSON.stringify(response)`, its `tools` serialised once per distinct list (`KeptJson`). */
export function responseJson(response: ResponseObject): string {
  const { tools } = response;
  if (!Array.isArray(tools) || tools.length === 0) return JSON.stringify(response);
  let toolsJson = toolsJsonOfList.get(tools);
  if (toolsJson === undefined) {
    let key = '';
    for (const tool of tools) key += `${String(tool?.type)}:${String(tool?.name)}\u0000`;
    toolsJson = kept.get(key, tools);
    toolsJsonOfList.set(tools, toolsJson);
  }
  // a "tools":[] anywhere else (an output item's) makes the hole ambiguous: serialise it whole
  const sides = aroundHole(JSON.stringify({ ...response, tools: [] }), TOOLS_HOLE);
  return sides ? sides[0] + toolsJson + sides[1] : JSON.stringify(response);
}
