import { invalidRequest } from '../errors.js';
import type { ModelItem, ModelPart } from '../protocol/model.js';
import type { JsonObject } from '../protocol/responses.js';
import type { DeclareContext } from '../tools/handler.js';
import { mcpModelName } from '../mcp/naming.js';
import { compactionToModelItem } from './compaction.js';
import { CODE_INTERPRETER_FUNCTION } from '../tools/handlers/code-interpreter.js';
import { CUSTOM_INPUT_KEY } from '../tools/handlers/custom.js';
import { flattenedName } from '../tools/handlers/namespace.js';
import { TOOL_SEARCH_NAME } from '../tools/handlers/tool-search.js';
import { parseTools, type ToolRegistry } from '../tools/registry.js';
import { ToolDeclarationError } from '../tools/types.js';

/**
 * Public items (history + this turn's input) → the neutral model conversation. Client-shaped
 * calls are re-flattened to the names the model saw (namespaced and custom calls included), and
 * every call is paired with its output by `call_id`, never by position.
 */
export function toModelItems(items: readonly JsonObject[], registry: ToolRegistry): ModelItem[] {
  const out: ModelItem[] = [];
  // An approval request becomes the model's call once the client answers it; unanswered, it is
  // left out (a call without a result breaks most chat templates).
  const approvalRequests = new Map<string, JsonObject>();
  const answeredApprovals = new Set<string>();
  for (const item of items) {
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
      case 'mcp_call': {
        const approvalId = typeof item.approval_request_id === 'string' ? item.approval_request_id : undefined;
        const callId = approvalId && answeredApprovals.has(approvalId) ? approvalId : (item.id as string);
        if (callId !== approvalId) out.push({ type: 'function_call', callId, name: mcpModelName(String(item.server_label), String(item.name)), arguments: String(item.arguments ?? '{}') });
        out.push({ type: 'function_call_output', callId, output: item.error ? `Error: ${stringify(item.error)}` : stringify(item.output ?? '') });
        break;
      }
      case 'code_interpreter_call': {
        // an earlier run, as the model made it: a python call and what it printed
        const callId = String(item.id);
        out.push({ type: 'function_call', callId, name: CODE_INTERPRETER_FUNCTION, arguments: JSON.stringify({ code: typeof item.code === 'string' ? item.code : '' }) });
        out.push({ type: 'function_call_output', callId, output: codeInterpreterLogs(item) });
        break;
      }
      default:
        // Gateway bookkeeping items (mcp_list_tools, approvals, hosted-call records) carry no
        // model-visible turn of their own here.
        break;
    }
  }
  return out;
}

/** `tool_search_output` items make the tools they carry visible to the model (architecture.md §2). */
export function loadSearchedTools(items: readonly JsonObject[], registry: ToolRegistry, ctx: DeclareContext): void {
  items.forEach((item, i) => {
    if (item.type !== 'tool_search_output' || !Array.isArray(item.tools)) return;
    const param = `input[${i}].tools`;
    try {
      for (const parsed of parseTools(item.tools, param)) {
        if (!parsed.handler) continue;
        for (const entry of parsed.handler.normalize(parsed.declaration, parsed.param, ctx)) {
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
  });
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

/** What an earlier code run printed (its `logs` outputs), when the item kept them. */
function codeInterpreterLogs(item: JsonObject): string {
  const outputs = Array.isArray(item.outputs) ? (item.outputs as JsonObject[]) : [];
  const logs = outputs.filter((o) => o.type === 'logs' && typeof o.logs === 'string').map((o) => o.logs as string);
  const images = outputs.filter((o) => o.type === 'image').length;
  const text = [...logs, ...(images > 0 ? [`[${images} figure(s) shown to the user]`] : [])].join('\n');
  return text || (item.outputs === null || item.outputs === undefined ? '(output not kept)' : '(no output)');
}
