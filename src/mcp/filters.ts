import type { JsonObject } from '../protocol/responses.js';

/** What a filter needs to know of a tool: its name and whether the server marks it read-only. */
export interface ToolTraits {
  name: string;
  readOnly: boolean;
}

/** `{tool_names?, read_only?}`: matches when every given criterion matches. */
function matchesFilter(filter: JsonObject, tool: ToolTraits): boolean {
  const names = filter.tool_names ?? undefined;
  if (Array.isArray(names) && !names.includes(tool.name)) return false;
  if (typeof filter.read_only === 'boolean' && filter.read_only !== tool.readOnly) return false;
  return Array.isArray(names) || typeof filter.read_only === 'boolean';
}

/**
 * `allowed_tools`: a list of names, or `{tool_names, read_only}`; absent = all. `read_only` comes
 * from the server's `readOnlyHint` annotation (absent = not read-only).
 */
export function isAllowed(allowedTools: unknown, tool: ToolTraits): boolean {
  if (allowedTools === undefined || allowedTools === null) return true;
  if (Array.isArray(allowedTools)) return allowedTools.includes(tool.name);
  if (typeof allowedTools === 'object') {
    const filter = allowedTools as JsonObject;
    if ((filter.tool_names ?? undefined) === undefined && (filter.read_only ?? undefined) === undefined) return true;
    return matchesFilter(filter, tool);
  }
  return false;
}

/**
 * `require_approval`: `"always"`, `"never"`, or `{always: filter, never: filter}`; omitted means
 * approval is required (OpenAI's default). A tool matching neither filter needs approval.
 */
export function needsApproval(requireApproval: unknown, tool: ToolTraits): boolean {
  if (requireApproval === 'never') return false;
  if (requireApproval === undefined || requireApproval === null || requireApproval === 'always') return true;
  if (typeof requireApproval === 'object') {
    const policy = requireApproval as JsonObject;
    // `always` wins over `never`: a tool named for approval is never run silently
    if (policy.always && typeof policy.always === 'object' && matchesFilter(policy.always as JsonObject, tool)) return true;
    if (policy.never && typeof policy.never === 'object' && matchesFilter(policy.never as JsonObject, tool)) return false;
    return true;
  }
  return true;
}
