import { createHash } from 'node:crypto';
import { invalidRequest } from '../errors.js';
import { mcpModelName } from '../mcp/naming.js';
import type { JsonObject } from '../protocol/responses.js';
import type { ResponseStore } from '../store/store.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { ModelCall, RegistryEntry } from '../tools/types.js';

export interface ApprovedCall {
  /** callId = the approval request's id; arguments exactly as requested. */
  call: ModelCall;
  entry: RegistryEntry;
}

/** Binds an approval to its server, tool and arguments. */
export function approvalDigest(request: JsonObject): string {
  return createHash('sha256').update(JSON.stringify([request.server_label, request.name, request.arguments])).digest('hex');
}

/**
 * Checks every `mcp_approval_response` in the input (responses-api.md §3, approval flow): it must
 * answer an `mcp_approval_request` in the conversation that this gateway issued, once, with the
 * request's server, tool and arguments unchanged, for a tool this request still declares.
 * Approved calls are returned to run with exactly the requested arguments; denials need nothing
 * here (the model is told in the conversation).
 */
export async function resolveApprovals(history: readonly JsonObject[], input: readonly JsonObject[], registry: ToolRegistry, store: ResponseStore): Promise<ApprovedCall[]> {
  const requests = new Map<string, JsonObject>();
  const used = new Set<string>();
  for (const item of history) {
    if (item.type === 'mcp_approval_request') requests.set(item.id as string, item);
    if (item.type === 'mcp_approval_response') used.add(item.approval_request_id as string);
    if (item.type === 'mcp_call' && typeof item.approval_request_id === 'string') used.add(item.approval_request_id);
  }
  // Stateless clients echo the whole history: an approval answered in an earlier turn is followed
  // by what the model did next. Only answers after the last model-produced item are new.
  let lastModelItem = -1;
  input.forEach((item, i) => {
    if (isModelProduced(item)) lastModelItem = i;
  });
  const approved: ApprovedCall[] = [];
  const answers: Array<{ id: string; request: JsonObject; entry: RegistryEntry; param: string; approve: boolean }> = [];
  for (let i = 0; i < input.length; i++) {
    const item = input[i];
    if (item.type === 'mcp_approval_request') requests.set(item.id as string, item);
    if (item.type !== 'mcp_approval_response' || i < lastModelItem) continue;
    const param = `input[${i}].approval_request_id`;
    const id = item.approval_request_id as string;
    const request = requests.get(id);
    if (!request) throw invalidRequest(`No MCP approval request with id '${id}' in this conversation.`, param, 'approval_request_not_found');
    if (used.has(id)) throw invalidRequest(`The MCP approval request '${id}' was already answered.`, param, 'approval_request_already_used');
    used.add(id);
    const entry = registry.lookup(mcpModelName(String(request.server_label), String(request.name)));
    if (!entry || entry.identity.type !== 'mcp' || entry.identity.serverLabel !== request.server_label) {
      throw invalidRequest(`The MCP approval request '${id}' is for tool '${String(request.name)}' of server '${String(request.server_label)}', which this request does not offer.`, param, 'approval_request_mismatch');
    }
    answers.push({ id, request, entry, param, approve: item.approve === true });
  }
  // every answer is checked before any is used up, so a request with one bad answer can be retried
  for (const { id, request, param } of answers) rejectUnusable(await store.checkApproval(id, approvalDigest(request)), id, param);
  for (const { id, request, entry, param, approve } of answers) {
    rejectUnusable(await store.consumeApproval(id, approvalDigest(request)), id, param);
    if (approve) approved.push({ call: { callId: id, modelName: entry.modelName, arguments: String(request.arguments ?? '{}') }, entry });
  }
  return approved;
}

function rejectUnusable(verdict: 'ok' | 'unknown' | 'used' | 'mismatch', id: string, param: string): void {
  if (verdict === 'unknown') throw invalidRequest(`The MCP approval request '${id}' was not issued by this gateway.`, param, 'approval_request_not_found');
  if (verdict === 'used') throw invalidRequest(`The MCP approval request '${id}' was already answered.`, param, 'approval_request_already_used');
  if (verdict === 'mismatch') throw invalidRequest(`The MCP approval request '${id}' does not match the request that was issued (server, tool or arguments changed).`, param, 'approval_request_mismatch');
}

const CLIENT_ITEM_TYPES = new Set(['mcp_approval_response', 'function_call_output', 'custom_tool_call_output', 'tool_search_output', 'item_reference']);

function isModelProduced(item: JsonObject): boolean {
  if (item.type === 'message') return item.role === 'assistant';
  return !CLIENT_ITEM_TYPES.has(String(item.type));
}
