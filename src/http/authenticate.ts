import type { HttpRequest } from './exchange.js';
import type { ApiKey, KeyRing } from '../auth/key-ring.js';
import { Errors } from '../errors.js';

/** Paths answered without a key: liveness, readiness and metrics scrapes. */
const OPEN_PATHS = new Set(['/health', '/ready', '/metrics']);

export function needsKey(path: string): boolean {
  return !OPEN_PATHS.has(path);
}

/** The key a client sent: `Authorization: Bearer …` (OpenAI clients) or `x-api-key` (Anthropic clients). */
export function presentedKey(req: HttpRequest): string | undefined {
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const apiKey = req.headers['x-api-key'];
  return typeof apiKey === 'string' && apiKey.length > 0 ? apiKey : undefined;
}

/** A 401 `invalid_api_key` when the key is missing or not accepted. */
export function authenticate(ring: KeyRing, req: HttpRequest): ApiKey {
  const presented = presentedKey(req);
  if (presented === undefined) {
    throw Errors.invalidApiKey("You didn't provide an API key. Send it as 'Authorization: Bearer <key>' (or 'x-api-key: <key>').");
  }
  const key = ring.authenticate(presented);
  if (!key) throw Errors.invalidApiKey(`Incorrect API key provided: ${maskKey(presented)}.`);
  return key;
}

/** Enough of a key to recognise it, never enough to use it. */
function maskKey(key: string): string {
  return key.length <= 8 ? '***' : `${key.slice(0, 4)}***${key.slice(-2)}`;
}
