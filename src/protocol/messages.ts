/**
 * Anthropic Messages API wire types (the subset Switchyard reads and writes) and the pure id
 * mappings between the two public surfaces. Reference: docs/reference/anthropic-messages.md.
 * Types and pure functions only — no behaviour beyond that, no I/O, no imports from src/.
 */

export type JsonObject = Record<string, unknown>;

// ---------- output content blocks (docs/reference/anthropic-messages.md §5) ----------

export interface WebSearchResultLocation {
  type: 'web_search_result_location';
  url: string;
  title: string | null;
  encrypted_index: string;
  cited_text: string;
}

export interface TextBlock { type: 'text'; text: string; citations: WebSearchResultLocation[] | null }
export interface ThinkingBlock { type: 'thinking'; thinking: string; signature: string }
export interface ToolUseBlock { type: 'tool_use'; id: string; name: string; input: unknown; caller?: { type: 'direct' } }
export interface ServerToolUseBlock { type: 'server_tool_use'; id: string; name: 'web_search'; input: JsonObject; caller?: { type: 'direct' } }
export interface WebSearchResult { type: 'web_search_result'; url: string; title: string; encrypted_content: string; page_age: string | null }
export type WebSearchErrorCode = 'invalid_tool_input' | 'unavailable' | 'max_uses_exceeded' | 'too_many_requests' | 'query_too_long' | 'request_too_large';
export interface WebSearchToolResultBlock {
  type: 'web_search_tool_result';
  tool_use_id: string;
  caller?: { type: 'direct' };
  content: WebSearchResult[] | { type: 'web_search_tool_result_error'; error_code: WebSearchErrorCode };
}
export interface McpToolUseBlock { type: 'mcp_tool_use'; id: string; name: string; server_name: string; input: JsonObject }
export interface McpToolResultBlock { type: 'mcp_tool_result'; tool_use_id: string; is_error: boolean; content: TextBlock[] }

export type ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock | ServerToolUseBlock | WebSearchToolResultBlock | McpToolUseBlock | McpToolResultBlock;

/** Blocks whose `input` arrives as `input_json_delta` fragments. */
export const INPUT_JSON_BLOCKS: ReadonlySet<string> = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use']);

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';

/** `usage` with every field the API sends; what an open-model upstream cannot know is null. */
export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
  cache_creation: null;
  server_tool_use: { web_search_requests: number; web_fetch_requests: number } | null;
  output_tokens_details: null;
  service_tier: 'standard' | null;
  inference_geo: null;
  speed: null;
  fallback_credit: null;
  iterations: null;
}

/** The `message` object (`type: "message"`), as `POST /v1/messages` returns it. */
export interface MessageObject {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  stop_details: null;
  container: null;
  /** Cache diagnostics (`diagnostics` request field): the gateway has none to give. */
  diagnostics: null;
  /** Beta context management: not applied by the gateway. */
  context_management: null;
  usage: MessagesUsage;
}

// ---------- stream events (§6) ----------

export type ContentDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'input_json_delta'; partial_json: string }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'signature_delta'; signature: string }
  | { type: 'citations_delta'; citation: WebSearchResultLocation };

/** Cumulative totals; null = unchanged (the SDK overwrites only what is non-null). */
export interface MessageDeltaUsage {
  output_tokens: number;
  input_tokens: number | null;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
  server_tool_use: MessagesUsage['server_tool_use'];
  output_tokens_details: null;
}

export type MessagesStreamEvent =
  | { type: 'message_start'; message: MessageObject }
  | { type: 'content_block_start'; index: number; content_block: ContentBlock }
  | { type: 'content_block_delta'; index: number; delta: ContentDelta }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: StopReason | null; stop_sequence: string | null; stop_details: null; container: null }; usage: MessageDeltaUsage }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: { type: MessagesErrorType; message: string } };

// ---------- errors (§7) ----------

export type MessagesErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface MessagesErrorBody {
  type: 'error';
  error: { type: MessagesErrorType; message: string };
  request_id: string | null;
}

/** Anthropic's `error.type` for an HTTP status (the SDK picks its error class by status). */
export function messagesErrorType(status: number): MessagesErrorType {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

// ---------- ids (stateless mappings between the two surfaces) ----------

/**
 * A client call's `tool_use` id. Messages is stateless, so the mapping must survive the round
 * trip without a table: the internal `call_id` is carried inside the `toolu_` id, and the id
 * that comes back in `tool_use` / `tool_result` blocks is used as the `call_id` as it is. Ids minted elsewhere
 * (`toolu_01…` from another provider) pass through unchanged in both directions.
 */
export function toolUseIdOf(callId: string): string {
  return callId.startsWith('toolu_') ? callId : `toolu_${callId}`;
}

/** `resp_<hex>` → `msg_<hex>`: the message is named after the engine's response. */
export function messageIdOf(responseId: string): string {
  const at = responseId.indexOf('_');
  return `msg_${at === -1 ? responseId : responseId.slice(at + 1)}`;
}

/** A gateway item id (`ws_…`, `mcp_…`) → an id with the Messages prefix for its block. */
export function blockIdOf(prefix: 'srvtoolu' | 'mcptoolu', itemId: string): string {
  const at = itemId.indexOf('_');
  return `${prefix}_${at === -1 ? itemId : itemId.slice(at + 1)}`;
}
