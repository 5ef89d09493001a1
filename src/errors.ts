/**
 * One catalogue of client-visible failures (OpenAI error shape). Where a failure goes is decided
 * by the thrower: before the stream starts it is an HTTP error; after, a `response.failed` event.
 *
 * Every code a client can see is a key of ERROR_CATALOGUE, with the status, type and retryability
 * it is usually sent with; the README's error table lists the same codes (test/errors-catalogue.test.ts).
 * Failures that always read the same are built by the named constructors in `Errors`; request
 * validation, whose messages name the offending field, uses `invalidRequest` / `notFound` with a
 * catalogued code.
 */
export type ErrorType = 'invalid_request_error' | 'not_found_error' | 'server_error' | 'upstream_error' | 'timeout_error' | 'rate_limit_error' | 'external_connector_error';

interface CatalogueEntry {
  /** The status it is sent with; `alsoStatus` where a code has more than one (e.g. an upstream's own 4xx). */
  readonly status: number;
  readonly alsoStatus?: readonly number[] | 'upstream 4xx';
  readonly type: ErrorType;
  /** Whether a client retrying the same request could succeed (`x-should-retry` on 5xx). */
  readonly retryable: boolean;
  /** One line for the README: when a client sees it. */
  readonly when: string;
}

const bad = (when: string): CatalogueEntry => ({ status: 400, type: 'invalid_request_error', retryable: false, when });
const missing = (when: string): CatalogueEntry => ({ status: 404, type: 'invalid_request_error', retryable: false, when });

export const ERROR_CATALOGUE = {
  // request validation (400)
  invalid_value: bad('a field has a value outside what it accepts'),
  invalid_type: bad('a field has the wrong JSON type'),
  missing_required_parameter: bad('a required field is absent'),
  unsupported_parameter: bad('a field this gateway (or this mode) does not support'),
  integer_below_min_value: bad('an integer below its minimum'),
  integer_above_max_value: bad('an integer above its maximum'),
  empty_array: bad('an array that must not be empty is empty'),
  array_above_max_length: bad('an array longer than its maximum'),
  invalid_json: bad('the body (or a JSON string field) is not valid JSON, or not an object'),
  nesting_too_deep: bad('JSON nested deeper than the gateway parses'),
  invalid_request: bad('a multipart body that cannot be parsed'),
  invalid_tool: bad('a tool declaration that cannot be served'),
  duplicate_tool_name: bad('two tools declared under one name'),
  invalid_function_parameters: bad("a function's `parameters` is not a usable JSON Schema"),
  unsupported_connector: bad('an MCP `connector_id` (connectors are not offered)'),
  too_many_mcp_servers: bad('more MCP servers in one request than `mcp.maxServersPerRequest`'),
  mcp_server_url_not_allowed: bad("an MCP `server_url` the outbound guard refuses"),
  image_url_not_allowed: bad('an image URL the policy or the outbound guard refuses'),
  invalid_image_url: bad('an image URL that cannot be fetched or is not an image'),
  code_interpreter_unavailable: bad('code_interpreter declared where the sandbox cannot run'),
  approval_request_not_found: bad('an `mcp_approval_response` for a request this conversation does not have'),
  approval_request_already_used: bad('an approval request answered twice'),
  approval_request_mismatch: bad('an approval whose server, tool or arguments changed'),
  response_not_cancellable: bad('cancelling a response that was not created with `background: true`'),
  response_in_progress: bad('deleting a response that is still running'),
  item_not_found: { ...bad('an `item_reference` (400) or conversation item (404) that does not exist'), alsoStatus: [404] },
  conversation_locked: {
    ...bad('another turn holds the conversation (400); a turn lost its hold while generating (409, retryable, nothing stored)'),
    alsoStatus: [409],
  },
  context_length_exceeded: bad("the conversation is longer than the model's context (the upstream refused it, e.g. vLLM's `max_model_len`); agents such as Codex compact and retry"),
  invalid_method: bad('a request method that is not HTTP'),
  invalid_url: bad('a request URL that cannot be parsed'),
  invalid_http_request: bad('a request that is not valid HTTP/1.1'),
  invalid_websocket_handshake: { ...bad('a WebSocket upgrade that `ws` refuses (405 for a wrong method)'), alsoStatus: [405] },
  // not found (404)
  not_found: missing('a response id that does not exist'),
  previous_response_not_found: missing('an unknown `previous_response_id`'),
  conversation_not_found: missing('an unknown conversation, or one deleted while a response was generated'),
  container_not_found: missing('an unknown container'),
  file_not_found: missing('an unknown file in a container'),
  model_not_found: missing('a model no upstream serves (also an upstream 404)'),
  unknown_url: missing('no route at that path'),
  // other client errors
  invalid_api_key: { status: 401, type: 'invalid_request_error', retryable: false, when: 'no API key, or a wrong or revoked one, while keys exist (`auth.keys`, `switchyard keys`)' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', retryable: false, when: 'a method the path does not take (or CONNECT)' },
  request_timeout: { status: 408, type: 'invalid_request_error', retryable: false, when: 'headers or body not received in time' },
  request_too_large: { status: 413, type: 'invalid_request_error', retryable: false, when: 'a body over `limits.maxBodyBytes`' },
  file_too_large: { status: 413, type: 'invalid_request_error', retryable: false, when: 'an upload over the file size limit' },
  expectation_failed: { status: 417, type: 'invalid_request_error', retryable: false, when: "an `Expect` header other than `100-continue`" },
  mcp_list_tools_failed: { status: 424, type: 'external_connector_error', retryable: false, when: 'an MCP server whose tool list cannot be read' },
  request_header_fields_too_large: { status: 431, type: 'invalid_request_error', retryable: false, when: 'request line and headers too large' },
  client_disconnected: { status: 499, type: 'invalid_request_error', retryable: false, when: 'the client went away (recorded on the response; nobody reads the status)' },
  // upstream
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error', retryable: true, when: "the upstream answered 429, or a limit was reached: a key's `rpm` or `maxConcurrent`, `limits.maxConcurrentTurns` or `limits.maxOpenStreams` (with `Retry-After`)" },
  upstream_rejected: { status: 502, alsoStatus: 'upstream 4xx', type: 'invalid_request_error', retryable: false, when: "the upstream refused the request (its own 4xx and message)" },
  upstream_error: { status: 502, type: 'upstream_error', retryable: true, when: 'the upstream failed (5xx; retryable) or reported an error in its stream (not retryable)' },
  upstream_unavailable: { status: 502, type: 'upstream_error', retryable: true, when: 'the upstream cannot be reached' },
  upstream_connect_timeout: { status: 502, type: 'upstream_error', retryable: true, when: 'connecting to the upstream timed out' },
  upstream_disconnected: { status: 502, type: 'upstream_error', retryable: false, when: 'the upstream stream broke or ended early' },
  upstream_invalid_response: { status: 502, type: 'upstream_error', retryable: false, when: 'the upstream sent something that is not its protocol' },
  compaction_failed: { status: 502, type: 'upstream_error', retryable: false, when: 'the model returned an empty compaction summary' },
  upstream_timeout: { status: 504, type: 'timeout_error', retryable: false, when: 'no first byte in `upstream.firstTokenTimeoutMs`, or idle past `upstream.idleTimeoutMs`' },
  // the gateway itself
  server_error: { status: 500, type: 'server_error', retryable: false, when: 'a gateway bug, or a response that cannot be serialized' },
  file_content_missing: { status: 500, type: 'server_error', retryable: false, when: "a stored file's bytes are gone from the file folder" },
  store_unavailable: { status: 503, type: 'server_error', retryable: true, when: 'the database cannot be reached or is busy' },
  run_taken_over: { status: 503, type: 'server_error', retryable: true, when: 'another gateway process took the response over' },
  server_shutting_down: { status: 503, type: 'server_error', retryable: true, when: 'the gateway is draining for shutdown' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: ErrorCode | null,
    message: string,
    readonly param: string | null = null,
    /** Whether a client retrying the same request could succeed (sets `x-should-retry`). */
    readonly retryable = false,
  ) {
    super(message);
  }

  toBody(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** An error of a catalogued code with its catalogued status, type and retryability unless overridden. */
function catalogued(code: ErrorCode, message: string, param: string | null = null, override: { status?: number; retryable?: boolean } = {}): GatewayError {
  const entry: CatalogueEntry = ERROR_CATALOGUE[code];
  return new GatewayError(override.status ?? entry.status, entry.type, code, message, param, override.retryable ?? entry.retryable);
}

export const invalidRequest = (message: string, param: string | null, code: ErrorCode | null = 'invalid_value'): GatewayError =>
  new GatewayError(400, 'invalid_request_error', code, message, param);

export const notFound = (message: string, code: ErrorCode | null = 'not_found', param: string | null = null): GatewayError =>
  new GatewayError(404, 'invalid_request_error', code, message, param);

const SHUTTING_DOWN = 'The gateway is shutting down; retry on another instance.';

/** The failures that read the same wherever they are raised. */
export const Errors = {
  // conversations and runs
  conversationLocked: () =>
    catalogued('conversation_locked', 'Another process is currently operating on this conversation. Please retry in a few seconds.', 'conversation'),
  conversationLeaseLost: () =>
    catalogued('conversation_locked', 'This turn lost its hold on the conversation (another turn took it over); nothing was stored. Please retry.', 'conversation', { status: 409, retryable: true }),
  conversationDeletedDuringTurn: (conversationId: string | null | undefined) =>
    catalogued('conversation_not_found', `Conversation with id '${conversationId}' was deleted while this response was generated; nothing was stored.`, 'conversation'),
  runTakenOver: () => catalogued('run_taken_over', 'Another gateway process took this response over; it was not completed. Please retry.'),
  storeUnavailable: () => catalogued('store_unavailable', "The gateway's database is unavailable right now; retry shortly."),
  unsettledStoreUnavailable: () => catalogued('store_unavailable', 'The response was generated but could not be stored; retry shortly.'),
  unstorable: () => catalogued('server_error', 'The response was generated but could not be stored.'),
  internal: (message = 'The gateway hit an internal error.') => catalogued('server_error', message),
  shuttingDown: () => catalogued('server_shutting_down', SHUTTING_DOWN),
  fileContentMissing: (fileId: string) => catalogued('file_content_missing', `The content of ${fileId} is missing from the gateway's file folder.`),
  fileTooLarge: (limit: number) => catalogued('file_too_large', `The file exceeds the limit of ${limit} bytes.`, 'file'),
  // HTTP edges
  requestTooLarge: (limit: number) => catalogued('request_too_large', `The request body exceeds the limit of ${limit} bytes.`),
  requestTimeout: () => catalogued('request_timeout', 'The request was not received in time; send its headers and body without pausing.'),
  headersTooLarge: () => catalogued('request_header_fields_too_large', 'The request line and headers are too large (a URL or a header is too long).'),
  invalidMethod: () => catalogued('invalid_method', 'The request method is not a known HTTP method.'),
  invalidUrl: () => catalogued('invalid_url', 'The request URL is not valid.'),
  invalidHttpRequest: () => catalogued('invalid_http_request', 'The request is not valid HTTP/1.1.'),
  methodNotAllowed: (message: string) => catalogued('method_not_allowed', message),
  unknownUrl: (message: string) => catalogued('unknown_url', message),
  expectationFailed: () => catalogued('expectation_failed', `Unsupported 'Expect' header: only '100-continue' is supported.`, 'Expect'),
  invalidWebSocketHandshake: (reason: string, status: 400 | 405) =>
    catalogued('invalid_websocket_handshake', `Invalid WebSocket handshake: ${reason}.`, null, { status }),
  clientDisconnected: () => catalogued('client_disconnected', 'The client closed the request.'),
  // keys and limits
  invalidApiKey: (message: string) => catalogued('invalid_api_key', message),
  rateLimited: (message: string) => catalogued('rate_limit_exceeded', message),
  // upstream
  modelNotFound: (model: string) =>
    catalogued('model_not_found', `The model '${model}' does not exist or is not served by this gateway (GET /v1/models lists them).`, 'model'),
  upstreamUnavailable: (cause: string) => catalogued('upstream_unavailable', `The upstream model server is unreachable (${cause}).`),
  upstreamConnectTimeout: (cause: string) => catalogued('upstream_connect_timeout', `The upstream model server is unreachable (${cause}).`),
  upstreamTimeout: (message: string) => catalogued('upstream_timeout', message),
  upstreamDisconnected: (message: string) => catalogued('upstream_disconnected', message),
  upstreamInvalidResponse: (message: string) => catalogued('upstream_invalid_response', message),
  upstreamFailed: (status: number, message: string) => catalogued('upstream_error', `The upstream model server failed with status ${status}: ${message}`),
  upstreamRateLimited: (message: string) => catalogued('rate_limit_exceeded', `Upstream: ${message}`),
  upstreamNotFound: (message: string, param: string | null) => catalogued('model_not_found', `Upstream: ${message}`, param),
  contextLengthExceeded: (message: string) => catalogued('context_length_exceeded', `Upstream: ${message}`, 'input'),
  upstreamRejected: (status: number, message: string, param: string | null) =>
    catalogued('upstream_rejected', `Upstream: ${message}`, param, { status: status >= 400 && status < 500 ? status : 502 }),
  compactionFailed: () => catalogued('compaction_failed', 'The model returned an empty compaction summary.'),
  mcpServerUrlNotAllowed: (message: string, param: string) => catalogued('mcp_server_url_not_allowed', message, param),
  mcpListToolsFailed: (label: string, why: string, param: string | null) =>
    catalogued('mcp_list_tools_failed', `Error retrieving tool list from MCP server: '${label}'. ${why}`, param),
  /**
   * A blocking turn that failed after generation began, for a client that gets an HTTP error: the
   * failure's own status, type and retryability where known, else a non-retryable 502.
   */
  turnFailed: (cause: GatewayError | undefined, fallbackCode: ErrorCode | null, message: string) =>
    new GatewayError(cause?.status ?? 502, cause?.type ?? 'upstream_error', cause?.code ?? fallbackCode, message, null, cause?.retryable ?? false),
} as const;

/** A tool declaration the gateway cannot serve; the request validator turns it into a 400 naming `param`. */
export class ToolDeclarationError extends Error {
  constructor(message: string, readonly param: string, readonly code: ErrorCode = 'invalid_tool') {
    super(message);
  }
}

/** The abort reason a call's signal carries when its per-call timeout fired. */
export class ToolTimeoutError extends Error {}

/**
 * An error the upstream reported inside its stream. The code is the gateway's own (`upstream_error`,
 * whichever dialect): upstream codes (vLLM's `InternalServerError`, a bare `500`) are not part of
 * this API's catalogue, so the upstream's code is quoted in the message instead.
 */
export function upstreamStreamError(event: { message: string; code?: string }, context: string): GatewayError {
  const quoted = event.code ? ` (upstream code ${String(event.code).slice(0, 100)})` : '';
  return catalogued('upstream_error', `${context}: ${event.message}${quoted}`, null, { retryable: false });
}

/** Node/PostgreSQL/SQLite codes that mean "the database cannot be reached or is busy right now". */
const STORE_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'SQLITE_BUSY', 'SQLITE_LOCKED']);

/**
 * Any error as the client should see it: a GatewayError as is; the database being unreachable as
 * a retryable 503 (not a bug); anything else as a 500.
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : '';
  if ((typeof code === 'string' && STORE_UNAVAILABLE_CODES.has(code)) || /Connection terminated|timeout exceeded when trying to connect/.test(message)) {
    return Errors.storeUnavailable();
  }
  return Errors.internal();
}

/** Whether a failure is the database being unavailable (as opposed to a bug). */
export function isStoreUnavailable(err: unknown): boolean {
  return toGatewayError(err).code === 'store_unavailable';
}
