import { invalidRequest } from '../errors.js';
import type { ModelItem, ModelPart } from '../protocol/model.js';
import type { Item, JsonObject } from '../protocol/responses.js';
import { mcpModelName } from '../mcp/naming.js';
import { compactionToModelItem } from './compaction.js';
import { CUSTOM_INPUT_KEY } from '../tools/custom/handler.js';
import { flattenedName } from '../tools/namespace/handler.js';
import { TOOL_SEARCH_NAME } from '../tools/tool-search/handler.js';
import { replaySearchResult } from '../tools/tool-search/loaded.js';
import type { GatewayCallRecord } from '../store/store.js';
import type { DiscoverContext, ToolHandler } from '../tools/handler.js';
import { discoverTools, handlerForCallItem, parseTools, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError } from '../tools/types.js';

/**
 * Public items (history + this turn's input) → the neutral model conversation. Client-shaped
 * calls are re-flattened to the names the model saw (namespaced and custom calls included), and
 * every call is paired with its output by `call_id`, never by position. Gateway-executed calls
 * are replayed from their model-facing records (`records`, by item id) exactly as the model first
 * saw them; without a record, their tool type rebuilds what its public item holds, and the model is
 * told when the result itself is gone.
 */
export function toModelItems(items: readonly JsonObject[], registry: ToolRegistry, records: ReadonlyMap<string, GatewayCallRecord> = new Map()): ModelItem[] {
  const out: ModelItem[] = [];
  // Outputs of consecutive gateway calls of one round follow all of that round's calls, as the
  // model saw parallel calls: the calls, then their results. Calls of different rounds (or whose
  // round is not known) each come with their own result.
  const pendingOutputs: ModelItem[] = [];
  let pendingRound: string | undefined;
  const flushOutputs = () => {
    out.push(...pendingOutputs);
    pendingOutputs.length = 0;
  };
  // An approval request becomes the model's call once the client answers it; unanswered, it is
  // left out (a call without a result breaks most chat templates).
  const approvalRequests = new Map<string, JsonObject>();
  const answeredApprovals = new Set<string>();
  for (const item of items) {
    const gatewayCall = handlerForCallItem(String(item.type));
    if (gatewayCall) {
      const round = records.get(item.id as string)?.round;
      if (round === undefined || round !== pendingRound) flushOutputs();
      pendingRound = round;
      replayGatewayCall(item, gatewayCall, records.get(item.id as string), answeredApprovals, out, pendingOutputs);
      continue;
    }
    flushOutputs();
    switch (item.type) {
      case 'message': {
        const role = item.role as 'user' | 'assistant' | 'system' | 'developer';
        out.push({ type: 'message', role, content: toModelParts(item.content) });
        break;
      }
      case 'reasoning': {
        const text = reasoningText(item);
        if (text) out.push({ type: 'reasoning', text });
        break;
      }
      case 'function_call':
        out.push({ type: 'function_call', callId: item.call_id as string, name: modelNameFor(registry, 'function', item.name as string, item.namespace), arguments: item.arguments as string });
        break;
      case 'custom_tool_call':
        out.push({
          type: 'function_call',
          callId: item.call_id as string,
          name: modelNameFor(registry, 'custom', item.name as string, item.namespace),
          arguments: JSON.stringify({ [CUSTOM_INPUT_KEY]: item.input }),
        });
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        out.push({ type: 'function_call_output', callId: item.call_id as string, output: outputText(item.output) });
        break;
      case 'tool_search_call':
        out.push({ type: 'function_call', callId: callIdOf(item), name: TOOL_SEARCH_NAME, arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {}) });
        break;
      case 'tool_search_output': {
        if (item.execution === 'server') {
          // what the hosted search told the model, rebuilt from the tools it loaded
          out.push({ type: 'function_call_output', callId: callIdOf(item), output: replaySearchResult(item, registry) });
          break;
        }
        const tools = Array.isArray(item.tools) ? (item.tools as JsonObject[]) : [];
        const names = tools.map((t) => (t.type === 'namespace' ? `${String(t.name)} (namespace)` : String(t.name ?? t.type)));
        out.push({ type: 'function_call_output', callId: callIdOf(item), output: names.length ? `Loaded tools: ${names.join(', ')}` : 'No matching tools found.' });
        break;
      }
      case 'compaction': {
        // a summary this gateway made stands for the conversation before it
        const summary = compactionToModelItem(item);
        if (summary) out.push(summary);
        break;
      }
      case 'mcp_approval_request':
        approvalRequests.set(item.id as string, item);
        break;
      case 'mcp_approval_response': {
        const id = item.approval_request_id as string;
        const request = approvalRequests.get(id);
        if (!request || answeredApprovals.has(id)) break;
        answeredApprovals.add(id);
        out.push({ type: 'function_call', callId: id, name: mcpModelName(String(request.server_label), String(request.name)), arguments: String(request.arguments ?? '{}') });
        if (item.approve !== true) {
          const reason = typeof item.reason === 'string' && item.reason ? `: ${item.reason}` : '.';
          out.push({ type: 'function_call_output', callId: id, output: `The user declined to run this tool call${reason}` });
        }
        break;
      }
      default:
        // Gateway bookkeeping items (mcp_list_tools, approvals, hosted-call records) carry no
        // model-visible turn of their own here.
        break;
    }
  }
  flushOutputs();
  return out;
}

/** Replays one gateway call: its call into `out`, its result into `outputs` (see toModelItems). */
function replayGatewayCall(item: JsonObject, handler: ToolHandler<any>, record: GatewayCallRecord | undefined, answeredApprovals: ReadonlySet<string>, out: ModelItem[], outputs: ModelItem[]): void {
  // a call the client approved was already replayed from its approval: only its result follows
  const approvalId = typeof item.approval_request_id === 'string' && answeredApprovals.has(item.approval_request_id) ? item.approval_request_id : undefined;
  if (record) {
    if (!approvalId) out.push({ type: 'function_call', callId: record.callId, name: record.name, arguments: record.arguments });
    outputs.push({ type: 'function_call_output', callId: approvalId ?? record.callId, output: record.output });
    return;
  }
  const rebuilt = handler.replayCall?.(item) ?? { name: String(item.type), arguments: '{}' };
  const callId = approvalId ?? String(item.id);
  if (!approvalId) out.push({ type: 'function_call', callId, name: rebuilt.name, arguments: rebuilt.arguments });
  outputs.push({ type: 'function_call_output', callId, output: rebuilt.output ?? unavailableResult(String(item.type)) });
}

/** What the model is told when a gateway call's result is no longer held (e.g. a `store: false` turn). */
function unavailableResult(itemType: string): string {
  return `[The result of this ${itemType} is no longer available: the gateway did not keep it (the turn was not stored). Call the tool again if you need it.]`;
}

/**
 * `tool_search_output` items make the tools they carry visible to the model (architecture.md §2).
 * Tools that discover what they offer (MCP servers) are listed as declared tools are; returns the
 * items that discovery produced (`mcp_list_tools`). `items` must still carry the credentials.
 */
export async function loadSearchedTools(items: readonly JsonObject[], registry: ToolRegistry, ctx: DiscoverContext): Promise<Item[]> {
  const discovered: Item[] = [];
  for (const [i, item] of items.entries()) {
    // a hosted search's output names tools the request declares (markSearchedTools), not new ones
    if (item.type !== 'tool_search_output' || !Array.isArray(item.tools) || item.execution === 'server') continue;
    const param = `input[${i}].tools`;
    try {
      const parsed = parseTools(item.tools, param);
      discovered.push(...(await discoverTools(parsed, ctx)));
      for (const tool of parsed) {
        if (!tool.handler) continue;
        for (const entry of tool.handler.normalize(tool.declaration, tool.param, ctx)) {
          const existing = registry.lookup(entry.modelName);
          if (existing && existing.identity.type === entry.identity.type && existing.identity.name === entry.identity.name && existing.identity.namespace === entry.identity.namespace) {
            registry.markLoaded(entry.modelName);
          } else {
            registry.add({ ...entry, deferred: false });
          }
        }
      }
    } catch (err) {
      if (err instanceof ToolDeclarationError) throw invalidRequest(err.message, err.param, err.code);
      throw err;
    }
  }
  return discovered;
}

function modelNameFor(registry: ToolRegistry, type: string, name: string, namespace: unknown): string {
  if (typeof namespace !== 'string' || namespace.length === 0) return name;
  for (const entry of registry.all()) {
    if (entry.identity.type === type && entry.identity.name === name && entry.identity.namespace === namespace) return entry.modelName;
  }
  return flattenedName(namespace, name);
}

function callIdOf(item: JsonObject): string {
  return typeof item.call_id === 'string' ? item.call_id : String(item.id);
}

function toModelParts(content: unknown): ModelPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const parts: ModelPart[] = [];
  for (const part of content as JsonObject[]) {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
      case 'summary_text':
      case 'reasoning_text':
        parts.push({ type: 'text', text: part.text as string });
        break;
      case 'refusal':
        parts.push({ type: 'text', text: String(part.refusal ?? '') });
        break;
      case 'input_image': {
        const url = typeof part.image_url === 'string' ? part.image_url : undefined;
        if (url) parts.push({ type: 'image', url, ...(typeof part.detail === 'string' && part.detail !== 'auto' ? { detail: part.detail } : {}) });
        break;
      }
      case 'input_file':
        parts.push({ type: 'text', text: `[file: ${String(part.filename ?? part.file_id ?? part.file_url ?? 'attachment')}]` });
        break;
    }
  }
  return parts;
}

function reasoningText(item: JsonObject): string {
  const content = Array.isArray(item.content) ? (item.content as JsonObject[]) : [];
  const text = content.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  if (text) return text;
  const summary = Array.isArray(item.summary) ? (item.summary as JsonObject[]) : [];
  return summary.map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return stringify(output);
  return (output as JsonObject[]).map((p) => (typeof p.text === 'string' ? p.text : p.type === 'input_image' ? '[image]' : '')).join('');
}

function stringify(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

