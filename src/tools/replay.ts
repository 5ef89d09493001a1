import type { ModelItem } from '../protocol/model.js';
import type { CustomToolCallOutputItem, FunctionCallOutputItem, Item } from '../protocol/responses.js';
import { flattenedName } from './names.js';
import type { ReplayContext } from './handler.js';

// Helpers for the `replay` hooks of client tool types: a call back under the name the model saw,
// an output paired by `call_id`.

/** The name the model saw for a client call: a namespaced member under its flattened name. */
export function replayedName(ctx: ReplayContext, type: string, name: string, namespace: unknown): string {
  if (typeof namespace !== 'string' || namespace.length === 0) return name;
  return ctx.declaredName(type, name, namespace) ?? flattenedName(namespace, name);
}

/** A `*_output` item → the model's tool result. */
export function replayedOutput(item: FunctionCallOutputItem | CustomToolCallOutputItem): ModelItem {
  return { type: 'function_call_output', callId: item.call_id, output: outputText(item.output) };
}

/** The call id of an item whose `call_id` may be null (tool_search): its item id then. */
export function callIdOf(item: Item): string {
  return typeof item.call_id === 'string' ? item.call_id : item.id;
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return JSON.stringify(output);
  return output.map((p: { type?: unknown; text?: unknown } | null) => (typeof p?.text === 'string' ? p.text : p?.type === 'input_image' ? '[image]' : '')).join('');
}
