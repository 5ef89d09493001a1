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
export type Annotation = UrlCitation | FileCitation | ({ type: string } & JsonObject);

export interface OutputTextPart { type: 'output_text'; text: string; annotations: Annotation[]; logprobs?: unknown[] }
export interface RefusalPart { type: 'refusal'; refusal: string }
export type OutputContentPart = OutputTextPart | RefusalPart;

export interface ReasoningTextPart { type: 'reasoning_text'; text: string }
export interface SummaryTextPart { type: 'summary_text'; text: string }

// ---------- items ----------

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'user' | 'assistant' | 'system' | 'developer';
  status: ItemStatus;
  content: Array<InputContentPart | OutputContentPart>;
  phase?: 'commentary' | 'final_answer';
}

export interface OutputMessageItem extends MessageItem {
  role: 'assistant';
  content: OutputContentPart[];
}

export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: SummaryTextPart[];
  content?: ReasoningTextPart[];
  encrypted_content?: string | null;
  status?: ItemStatus;
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
  status: ItemStatus;
}

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  id: string;
  call_id: string;
  output: string | InputContentPart[];
  status?: ItemStatus;
}

export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  status: ItemStatus;
}

export interface CustomToolCallOutputItem {
  type: 'custom_tool_call_output';
  id: string;
  call_id: string;
  output: string | InputContentPart[];
}

export interface ToolSearchCallItem {
  type: 'tool_search_call';
  id: string;
  call_id: string | null;
  arguments: unknown;
  execution: 'server' | 'client';
  status: ItemStatus;
}

export interface ToolSearchOutputItem {
  type: 'tool_search_output';
  id: string;
  call_id: string | null;
  execution: 'server' | 'client';
  status: ItemStatus;
  tools: JsonObject[];
}

/** Any item; gateway-owned tool items (mcp_call, web_search_call, …) are carried as open objects. */
export type Item =
  | MessageItem
  | ReasoningItem
  | FunctionCallItem
  | FunctionCallOutputItem
  | CustomToolCallItem
  | CustomToolCallOutputItem
  | ToolSearchCallItem
  | ToolSearchOutputItem
  | ({ type: string; id: string } & JsonObject);

// ---------- the Response object ----------

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

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
  text: JsonObject;
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
