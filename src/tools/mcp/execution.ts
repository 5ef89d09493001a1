import { ID_PREFIX, type McpApprovalRequestItem } from '../../protocol/responses.js';
import { failed, toolError, toolResult, type GatewayExecution, type ItemEmitter, type PlannedInvocation } from '../types.js';
import { needsApproval, type ToolTraits } from '../../mcp/filters.js';
import type { McpServerRef, McpService } from '../../mcp/service.js';

interface McpCallState {
  index: number;
  id: string;
  arguments: string;
}

/**
 * The execution side of one MCP server's tools: `tools/call` through the scheduler, projected as
 * `mcp_call` items with their event lifecycle (responses-api.md §5, "MCP call"), and approval
 * requests where `require_approval` asks for them.
 */
export function mcpExecution(service: McpService, server: McpServerRef, requireApproval: unknown, traits: ReadonlyMap<string, ToolTraits>, timeoutMs: number): GatewayExecution {
  const toolName = (inv: PlannedInvocation) => inv.entry.identity.name;
  return {
    parallelSafe: server.operator?.parallelSafe ?? true,
    timeoutMs,
    approvalScope: server.endpoint.kind === 'http' ? `url:${server.endpoint.url}` : `operator:${server.label}`,
    begin(inv, emit: ItemEmitter): McpCallState {
      const id = emit.newId(ID_PREFIX.mcpCall);
      const args = JSON.stringify(inv.args);
      const index = emit.add({
        type: 'mcp_call',
        id,
        server_label: server.label,
        name: toolName(inv),
        arguments: '',
        output: null,
        error: null,
        approval_request_id: inv.approvalRequestId ?? null,
        status: 'in_progress',
      });
      emit.event('response.mcp_call.in_progress', index);
      emit.event('response.mcp_call_arguments.delta', index, { delta: args });
      emit.event('response.mcp_call_arguments.done', index, { arguments: args });
      return { index, id, arguments: args };
    },
    async run(inv) {
      const outcome = await service.callTool(server, toolName(inv), inv.args, inv.signal, timeoutMs);
      return outcome.error === null ? toolResult(outcome.output) : toolError(outcome.error, 'model_error', outcome);
    },
    end(inv, outcome, emit, state) {
      const { index, id, arguments: args } = state as McpCallState;
      const error = failed(outcome) ? (outcome.reason ?? outcome.output) : null;
      emit.event(error === null ? 'response.mcp_call.completed' : 'response.mcp_call.failed', index);
      emit.done(index, {
        type: 'mcp_call',
        id,
        server_label: server.label,
        name: toolName(inv),
        arguments: args,
        output: error === null ? outcome.output : null,
        error,
        approval_request_id: inv.approvalRequestId ?? null,
        status: error === null ? 'completed' : 'failed',
      });
    },
    requiresApproval(inv) {
      if (inv.approvalRequestId) return false;
      const tool = traits.get(toolName(inv)) ?? { name: toolName(inv), readOnly: false };
      return needsApproval(requireApproval, tool);
    },
    requestApproval(inv, emit) {
      const item: McpApprovalRequestItem = {
        type: 'mcp_approval_request',
        id: emit.newId(ID_PREFIX.mcpApprovalRequest),
        server_label: server.label,
        name: toolName(inv),
        arguments: inv.call.arguments.trim() === '' ? '{}' : inv.call.arguments,
      };
      const index = emit.add(item);
      emit.done(index, item);
    },
  };
}
