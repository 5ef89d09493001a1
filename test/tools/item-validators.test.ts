// Each tool type validates its own items (ToolHandler.items, issue #10): the engine knows none of
// them by name. Valid items pass unchanged; a malformed field is a 400 naming it.
import { describe, expect, it } from 'vitest';
import { validateInputItem } from '../../src/engine/request.js';
import { GatewayError } from '../../src/errors.js';
import * as handlers from '../../src/tools/handler-list.js';
import { toolItemValidator } from '../../src/tools/registry.js';

function rejection(item: unknown): { param: string | null; code: string | null } {
  try {
    validateInputItem(item, 'input[2]');
  } catch (err) {
    const e = err as GatewayError;
    expect(e.status).toBe(400);
    return { param: e.param, code: e.code };
  }
  throw new Error(`accepted: ${JSON.stringify(item)}`);
}

const VALID: Record<string, Record<string, unknown>> = {
  function_call: { type: 'function_call', call_id: 'c1', name: 'f', arguments: '' },
  function_call_output: { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'ok' }] },
  custom_tool_call: { type: 'custom_tool_call', call_id: 'c2', name: 'patch', input: '*** Begin', namespace: 'ns' },
  custom_tool_call_output: { type: 'custom_tool_call_output', call_id: 'c2', output: 'done' },
  tool_search_call: { type: 'tool_search_call', call_id: null, execution: 'server', arguments: { query: 'x' } },
  tool_search_output: { type: 'tool_search_output', call_id: 'c3', execution: 'client', tools: [] },
  mcp_list_tools: { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'docs', tools: [] },
  mcp_call: { type: 'mcp_call', id: 'mcp_1', server_label: 'docs', name: 'search', arguments: '{}', output: 'r', error: null },
  mcp_approval_request: { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'docs', name: 'search', arguments: '{}' },
  mcp_approval_response: { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: false, reason: 'no' },
  web_search_call: { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
  file_search_call: { type: 'file_search_call', id: 'fs_1', status: 'completed', queries: ['q'], results: null },
  code_interpreter_call: { type: 'code_interpreter_call', id: 'ci_1', status: 'completed', code: 'print(1)', container_id: 'cntr_1', outputs: null },
};

describe('tool item validators', () => {
  it('every tool item type has exactly one owner among the tool types', () => {
    const owned = Object.values(handlers).flatMap((h) => Object.keys(h.items ?? {}));
    expect(owned.sort()).toEqual(Object.keys(VALID).sort());
    for (const type of owned) expect(toolItemValidator(type)).toBeTypeOf('function');
  });

  it('valid items come back as the same object', () => {
    for (const item of Object.values(VALID)) expect(validateInputItem(item, 'input[0]')).toBe(item);
  });

  it('function and custom calls and outputs name the missing or malformed field', () => {
    expect(rejection({ ...VALID.function_call, call_id: undefined })).toEqual({ param: 'input[2].call_id', code: 'missing_required_parameter' });
    expect(rejection({ ...VALID.function_call, name: 3 })).toEqual({ param: 'input[2].name', code: 'invalid_type' });
    expect(rejection({ ...VALID.function_call, arguments: {} })).toEqual({ param: 'input[2].arguments', code: 'invalid_type' });
    expect(rejection({ ...VALID.function_call, namespace: 1 })).toEqual({ param: 'input[2].namespace', code: 'invalid_type' });
    expect(rejection({ ...VALID.function_call_output, output: 1 })).toEqual({ param: 'input[2].output', code: 'invalid_type' });
    expect(rejection({ ...VALID.custom_tool_call, input: undefined })).toEqual({ param: 'input[2].input', code: 'missing_required_parameter' });
    expect(rejection({ ...VALID.custom_tool_call_output, call_id: '' })).toEqual({ param: 'input[2].call_id', code: 'invalid_type' });
  });

  it('tool_search items', () => {
    expect(rejection({ ...VALID.tool_search_call, execution: 'remote' })).toEqual({ param: 'input[2].execution', code: 'invalid_value' });
    expect(rejection({ ...VALID.tool_search_output, tools: {} })).toEqual({ param: 'input[2].tools', code: 'invalid_type' });
  });

  it('MCP items', () => {
    expect(rejection({ ...VALID.mcp_approval_response, approve: 'yes' })).toEqual({ param: 'input[2].approve', code: 'missing_required_parameter' });
    expect(rejection({ ...VALID.mcp_approval_response, approval_request_id: undefined })).toEqual({ param: 'input[2].approval_request_id', code: 'missing_required_parameter' });
    expect(rejection({ ...VALID.mcp_call, arguments: { q: 1 } })).toEqual({ param: 'input[2].arguments', code: 'invalid_type' });
    expect(rejection({ ...VALID.mcp_list_tools, tools: 'all' })).toEqual({ param: 'input[2].tools', code: 'invalid_type' });
    expect(rejection({ ...VALID.mcp_approval_request, name: 5 })).toEqual({ param: 'input[2].name', code: 'invalid_type' });
  });

  it('hosted call items', () => {
    expect(rejection({ ...VALID.web_search_call, action: 'search' })).toEqual({ param: 'input[2].action', code: 'invalid_type' });
    expect(rejection({ ...VALID.file_search_call, queries: 'q' })).toEqual({ param: 'input[2].queries', code: 'invalid_type' });
    expect(rejection({ ...VALID.code_interpreter_call, code: 1 })).toEqual({ param: 'input[2].code', code: 'invalid_type' });
    expect(rejection({ ...VALID.code_interpreter_call, outputs: {} })).toEqual({ param: 'input[2].outputs', code: 'invalid_type' });
  });
});
