import { InvalidItemError, checked, optionalArrayField, optionalStringField, requireStringField } from '../../protocol/item-validation.js';
import type { InputItem, JsonObject } from '../../protocol/responses.js';

/** `mcp_list_tools`: what a server offered in an earlier turn (reused instead of listing again). */
export function validateMcpListTools(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'server_label', param);
  optionalArrayField(item, 'tools', param);
  return checked(item);
}

/** `mcp_call`: a call the gateway ran (echoed by stateless clients). */
export function validateMcpCall(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'server_label', param);
  optionalStringField(item, 'name', param);
  optionalStringField(item, 'arguments', param);
  optionalStringField(item, 'approval_request_id', param);
  return checked(item);
}

/** `mcp_approval_request`: a call waiting for the client's approval. */
export function validateMcpApprovalRequest(item: JsonObject, param: string): InputItem {
  optionalStringField(item, 'server_label', param);
  optionalStringField(item, 'name', param);
  optionalStringField(item, 'arguments', param);
  return checked(item);
}

/** `mcp_approval_response`: the client's answer to an approval request. */
export function validateMcpApprovalResponse(item: JsonObject, param: string): InputItem {
  requireStringField(item, 'approval_request_id', param);
  if (typeof item.approve !== 'boolean') throw new InvalidItemError(`Missing required parameter: '${param}.approve'.`, `${param}.approve`, 'missing_required_parameter');
  optionalStringField(item, 'reason', param);
  return checked(item);
}
