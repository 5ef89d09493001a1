/**
 * OpenAI Responses API wire types (the subset Switchyard reads and writes).
 * Reference: docs/reference/responses-api.md. Types only — no behaviour, no I/O.
 */

export type JsonObject = Record<string, unknown>;

// ---------- content parts ----------

export interface InputTextPart { type: 'input_text'; text: string }
export interface InputImagePart { type: 'input_image'; image_url?: string | null; file_id?: string | null; detail?: string }
export interface InputFilePart { type: 'input_file'; file_id?: string | null; file_data?: string; file_url?: string; filename?: string }
export type InputContentPart = InputTextPart | InputImagePart | InputFilePart;

export interface UrlCitation { type: 'url_citation'; url: string; title: string; start_index: number; end_index: number }
export interface FileCitation { type: 'file_citation'; file_id: string; filename: string; index: number }
/** A file the code interpreter wrote, named in the answer (`/mnt/data/x.csv`). */
export interface ContainerFileCitation { type: 'container_file_citation'; container_id: string; file_id: string; filename: string; start_index: number; end_index: number }
export type Annotation = UrlCitation | FileCitation | ContainerFileCitation | ({ type: string } & JsonObject);

export interface OutputTextPart { type: 'output_text'; text: string; annotations: Annotation[]; logprobs?: unknown[] }
export interface RefusalPart { type: 'refusal'; refusal: string }
export type OutputContentPart = OutputTextPart | RefusalPart;

export interface ReasoningTextPart { type: 'reasoning_text'; text: string }
export interface SummaryTextPart { type: 'summary_text'; text: string }
/** A bare `text` part (accepted in input messages, as some clients send it). */
export interface PlainTextPart { type: 'text'; text: string }

/** Any part a message's content may hold (input messages also echo output and reasoning parts). */
export type MessageContentPart = InputContentPart | OutputContentPart | PlainTextPart | SummaryTextPart | ReasoningTextPart;

// ---------- items ----------

/**
 * Items carry fields this gateway does not read (a client's extras, OpenAI's newer fields): they
 * are kept as they came. Each item type below names the fields the gateway reads.
 */
export interface ItemFields {
  [field: string]: unknown;
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface MessageItem extends ItemFields {
  type: 'message';
  id: string;
  role: 'user' | 'assistant' | 'system' | 'developer';
  status: ItemStatus;
  content: MessageContentPart[];
  phase?: 'commentary' | 'final_answer';
}

export interface OutputMessageItem extends MessageItem {
  role: 'assistant';
  content: OutputContentPart[];
}

export interface ReasoningItem extends ItemFields {
  type: 'reasoning';
  id: string;
  summary: SummaryTextPart[];
  content?: ReasoningTextPart[];
  encrypted_content?: string | null;
  status?: ItemStatus;
}

export interface FunctionCallItem extends ItemFields {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
  /** Always set on output; a client may echo the item without it. */
  status?: ItemStatus;
}

export interface FunctionCallOutputItem extends ItemFields {
  type: 'function_call_output';
  id: string;
  call_id: string;
  output: string | InputContentPart[];
  status?: ItemStatus;
}

export interface CustomToolCallItem extends ItemFields {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  /** Always set on output; a client may echo the item without it. */
  status?: ItemStatus;
}

export interface CustomToolCallOutputItem extends ItemFields {
  type: 'custom_tool_call_output';
  id: string;
  call_id: string;
  output: string | InputContentPart[];
}

export interface ToolSearchCallItem extends ItemFields {
  type: 'tool_search_call';
  id: string;
  call_id: string | null;
  arguments: unknown;
  execution: 'server' | 'client';
  /** Always set on output; a client may echo the item without it. */
  status?: ItemStatus;
}

export interface ToolSearchOutputItem extends ItemFields {
  type: 'tool_search_output';
  id: string;
  call_id: string | null;
  execution: 'server' | 'client';
  /** Always set on output; a client may echo the item without it. */
  status?: ItemStatus;
  tools: JsonObject[];
}

/** Status of a hosted tool's call item (`searching`, `interpreting`, `failed` … as OpenAI reports them). */
export type ToolCallStatus = ItemStatus | 'searching' | 'interpreting' | 'calling' | 'failed';

export interface McpListToolsItem extends ItemFields {
  type: 'mcp_list_tools';
  id: string;
  server_label: string;
  tools: JsonObject[];
  error?: string | null;
}

export interface McpCallItem extends ItemFields {
  type: 'mcp_call';
  id: string;
  server_label: string;
  name: string;
  arguments: string;
  output?: string | null;
  error?: unknown;
  approval_request_id?: string | null;
  status?: ToolCallStatus;
}

export interface McpApprovalRequestItem extends ItemFields {
  type: 'mcp_approval_request';
  id: string;
  server_label: string;
  name: string;
  arguments: string;
}

export interface McpApprovalResponseItem extends ItemFields {
  type: 'mcp_approval_response';
  id: string;
  approval_request_id: string;
  approve: boolean;
  reason?: string | null;
}

export interface WebSearchCallItem extends ItemFields {
  type: 'web_search_call';
  id: string;
  status?: ToolCallStatus;
  action?: JsonObject;
  results?: unknown;
}

export interface FileSearchCallItem extends ItemFields {
  type: 'file_search_call';
  id: string;
  status?: ToolCallStatus;
  queries: string[];
  results: JsonObject[] | null;
}

export interface CodeInterpreterCallItem extends ItemFields {
  type: 'code_interpreter_call';
  id: string;
  status?: ToolCallStatus;
  code: string | null;
  container_id: string;
  outputs: JsonObject[] | null;
}

/** A `compaction` item as stored and returned: the summary travels in `encrypted_content`. */
export interface CompactionItem extends ItemFields {
  type: 'compaction';
  id: string;
  encrypted_content: string;
}

/** An input item standing for a stored item (resolved before the turn runs; never stored). */
export interface ItemReference extends ItemFields {
  type: 'item_reference';
  id: string;
}

/** Any stored or returned item, discriminated by `type`. */
export type Item =
  | MessageItem
  | ReasoningItem
  | CompactionItem
  | FunctionCallItem
  | FunctionCallOutputItem
  | CustomToolCallItem
  | CustomToolCallOutputItem
  | ToolSearchCallItem
  | ToolSearchOutputItem
  | McpListToolsItem
  | McpCallItem
  | McpApprovalRequestItem
  | McpApprovalResponseItem
  | WebSearchCallItem
  | FileSearchCallItem
  | CodeInterpreterCallItem;

export type ItemType = Item['type'];

/**
 * An item as a client sends it in `input` (or a conversation's `items`): the id (and status) are
 * minted when absent, a message's content may be one string, and a stored item may be referenced.
 */
export type InputItem = IncomingItem<Item> | ItemReference;

/** An input item once its references are resolved: an item as the client sent it or as stored. */
export type ResolvedInputItem = Exclude<InputItem, ItemReference>;

type IncomingItem<T> = T extends MessageItem
  ? Without<T, 'id' | 'status' | 'content'> & { id?: string; status?: ItemStatus; content: string | T['content'] }
  : Without<T, 'id' | 'status'> & { id?: string } & Partial<Pick<T, Extract<keyof T, 'status'>>>;

/** `Omit` that keeps an index signature's known fields (the built-in one drops them). */
type Without<T, K> = { [P in keyof T as P extends K ? never : P]: T[P] };

// ---------- request configuration ----------

/** `text.format`: plain text, any JSON object, or JSON matching a schema. */
export type TextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonObject; strict?: boolean | null; description?: string | null };

/** The request's (and the Response's) `text` configuration. */
export interface TextConfig {
  format: TextFormat;
  verbosity: 'low' | 'medium' | 'high';
}

// ---------- the Response object ----------

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** A status after which a response never changes again (only deletion removes it). */
export function isTerminalStatus(status: string): boolean {
  return status === 'completed' || status === 'incomplete' || status === 'failed' || status === 'cancelled';
}

export interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseError { code: string; message: string }

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  incomplete_details: { reason: string } | null;
  model: string;
  previous_response_id: string | null;
  instructions: string | JsonObject[] | null;
  output: Item[];
  error: ResponseError | null;
  tools: JsonObject[];
  tool_choice: unknown;
  truncation: 'auto' | 'disabled';
  parallel_tool_calls: boolean;
  text: TextConfig;
  top_p: number;
  presence_penalty: number;
  frequency_penalty: number;
  top_logprobs: number;
  temperature: number;
  reasoning: { effort: string | null; summary: string | null } | null;
  usage: Usage | null;
  max_output_tokens: number | null;
  max_tool_calls: number | null;
  store: boolean;
  background: boolean;
  service_tier: string;
  metadata: Record<string, string>;
  safety_identifier: string | null;
  prompt_cache_key: string | null;
  user?: string | null;
  conversation?: { id: string } | null;
}

// ---------- stream events ----------

/** A public stream event: its `type`, its payload fields, and the `sequence_number` added by the emitter. */
export interface StreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'response.completed',
  'response.incomplete',
  'response.failed',
  'response.cancelled',
  'error',
]);

/** Id prefixes as OpenAI mints them (clients treat ids as opaque; humans read them). */
export const ID_PREFIX = {
  response: 'resp',
  message: 'msg',
  functionCall: 'fc',
  customToolCall: 'ctc',
  reasoning: 'rs',
  call: 'call',
  functionCallOutput: 'fco',
  webSearch: 'ws',
  fileSearch: 'fs',
  codeInterpreter: 'ci',
  mcpListTools: 'mcpl',
  mcpCall: 'mcp',
  mcpApprovalRequest: 'mcpr',
  toolSearch: 'tsc',
  toolSearchOutput: 'tso',
  item: 'item',
} as const;
