import { createHash } from 'node:crypto';
import { invalidRequest } from '../../errors.js';
import { mcpModelName } from '../../mcp/naming.js';
import type { Item, McpApprovalRequestItem } from '../../protocol/responses.js';
import { isModelProduced } from '../../util/items.js';
import type { ApprovalGate } from '../handler.js';
import type { ApprovalVerdict, ApprovedCall, RegistryEntry, RegistryView } from '../types.js';

// MCP's approvals (`require_approval`): the turn emits `mcp_approval_request` and ends; the
// client answers with `mcp_approval_response`; the next turn checks the answer here and the
// engine uses it up when the approved call starts.

/**
 * Binds an approval to its server, tool and arguments. `serverScope` names the server the label
 * stood for when the request was issued (the execution's `approvalScope`, e.g. its URL), so
 * re-declaring the label with another `server_url` cannot run an approved call there.
 */
export function approvalDigest(request: Pick<McpApprovalRequestItem, 'server_label' | 'name' | 'arguments'>, serverScope = ''): string {
  return createHash('sha256').update(JSON.stringify([serverScope, request.server_label, request.name, request.arguments])).digest('hex');
}

/** The digest of an approval request as this request's registry resolves its server. */
function boundApprovalDigest(request: McpApprovalRequestItem, registry: RegistryView): string {
  const entry = registry.lookup(mcpModelName(request.server_label, request.name));
  return approvalDigest(request, entry?.execution?.approvalScope ?? '');
}

/**
 * Checks every `mcp_approval_response` in the input (responses-api.md §3, approval flow): it must
 * answer an `mcp_approval_request` in the conversation that this gateway issued, once, with the
 * request's server, tool and arguments unchanged, for a tool this request still offers (`offered`:
 * the names its first round offers the model; outside them a call is never run).
 * Answers are returned (approved calls with exactly the requested arguments) to be used up by
 * `useApprovals` when the turn runs; the model is told of denials in the conversation.
 */
async function resolveApprovals(
  history: readonly Item[],
  input: readonly Item[],
  registry: RegistryView,
  check: (id: string, digest: string) => Promise<ApprovalVerdict>,
  offered?: ReadonlySet<string>,
): Promise<ApprovedCall[]> {
  // nothing to check without an answer (and a long history is not walked for nothing)
  if (!input.some((item) => item.type === 'mcp_approval_response')) return [];
  const requests = new Map<string, McpApprovalRequestItem>();
  const used = new Set<string>();
  for (const item of history) {
    if (item.type === 'mcp_approval_request') requests.set(item.id, item);
    if (item.type === 'mcp_approval_response') used.add(item.approval_request_id);
    if (item.type === 'mcp_call' && typeof item.approval_request_id === 'string') used.add(item.approval_request_id);
  }
  // Stateless clients echo the whole history: an approval answered in an earlier turn is followed
  // by what the model did next. Only answers after the last model-produced item are new.
  let lastModelItem = -1;
  input.forEach((item, i) => {
    if (isModelProduced(item)) lastModelItem = i;
  });
  const approved: ApprovedCall[] = [];
  const answers: Array<{ id: string; request: McpApprovalRequestItem; entry: RegistryEntry; param: string; approve: boolean }> = [];
  for (let i = 0; i < input.length; i++) {
    const item = input[i];
    if (item.type === 'mcp_approval_request') requests.set(item.id, item);
    if (item.type !== 'mcp_approval_response' || i < lastModelItem) continue;
    const param = `input[${i}].approval_request_id`;
    const id = item.approval_request_id;
    const request = requests.get(id);
    if (!request) throw invalidRequest(`No MCP approval request with id '${id}' in this conversation.`, param, 'approval_request_not_found');
    if (used.has(id)) throw invalidRequest(`The MCP approval request '${id}' was already answered.`, param, 'approval_request_already_used');
    used.add(id);
    const entry = registry.lookup(mcpModelName(String(request.server_label), String(request.name)));
    // an approved call runs only if this request offers its tool (a denial runs nothing)
    const runnable = (e: RegistryEntry) => registry.isVisible(e) && (item.approve !== true || !offered || offered.has(e.modelName));
    if (!entry || entry.identity.type !== 'mcp' || entry.identity.serverLabel !== request.server_label || !runnable(entry)) {
      throw invalidRequest(`The MCP approval request '${id}' is for tool '${String(request.name)}' of server '${String(request.server_label)}', which this request does not offer.`, param, 'approval_request_mismatch');
    }
    answers.push({ id, request, entry, param, approve: item.approve === true });
  }
  // checked only: an answer is used up when its turn starts running (useApprovals), so a request
  // that fails before that — a failed launch, a client gone — leaves it usable for a retry
  for (const { id, request, entry, param, approve } of answers) {
    const digest = approvalDigest(request, entry.execution?.approvalScope ?? '');
    rejectUnusable(await check(id, digest), id, param);
    approved.push({ call: { callId: id, modelName: entry.modelName, arguments: String(request.arguments ?? '{}') }, entry, approve, digest });
  }
  return approved;
}

function rejectUnusable(verdict: ApprovalVerdict, id: string, param: string): void {
  if (verdict === 'unknown') throw invalidRequest(`The MCP approval request '${id}' was not issued by this gateway.`, param, 'approval_request_not_found');
  if (verdict === 'used') throw invalidRequest(`The MCP approval request '${id}' was already answered.`, param, 'approval_request_already_used');
  if (verdict === 'mismatch') throw invalidRequest(`The MCP approval request '${id}' does not match the request that was issued (server, tool or arguments changed).`, param, 'approval_request_mismatch');
}

export const mcpApprovalGate: ApprovalGate = {
  requestItemType: 'mcp_approval_request',
  answerItemType: 'mcp_approval_response',
  resolve: resolveApprovals,
  bind: (item, registry) => (item.type === 'mcp_approval_request' ? boundApprovalDigest(item, registry) : undefined),
};
