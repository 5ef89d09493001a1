import { toGatewayError } from '../errors.js';
import { messagesErrorType, type MessagesErrorBody } from '../protocol/messages.js';

/**
 * Any failure before a Messages stream starts, in Anthropic's shape (reference §7):
 * `{"type":"error","error":{"type","message"},"request_id"}` with the matching status. The
 * status comes from the gateway's one error catalogue; only the body differs from `/v1/responses`.
 */
export function sendMessagesError(res: { writeHead(status: number, headers: Record<string, string>): unknown; end(text: string): unknown }, err: unknown, requestId: string): void {
  const known = toGatewayError(err);
  const body: MessagesErrorBody = {
    type: 'error',
    error: { type: messagesErrorType(known.status), message: known.param && !known.message.startsWith(known.param) ? `${known.param}: ${known.message}` : known.message },
    request_id: requestId,
  };
  const text = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'request-id': requestId };
  // the SDKs obey x-should-retry over their own status rules
  if (known.status >= 500 || known.status === 429) headers['x-should-retry'] = String(known.retryable);
  res.writeHead(known.status, headers);
  res.end(text);
}
