// A tiny HTTP/1.1 client on a raw socket, for requests no well-behaved client library would send
// (bad methods, broken headers, slow or unfinished requests).
import { connect } from 'node:net';

export interface RawAnswer {
  /** 0 when the server closed without answering. */
  status: number;
  headers: Record<string, string>;
  body: string;
  elapsedMs: number;
}

/**
 * Writes `request` (all of it, or piece by piece through `write`), then reads until the server
 * closes the connection. Rejects if it is still open after `timeoutMs`.
 */
export function rawRequest(port: number, request: string | Buffer | ((write: (chunk: string) => boolean) => void), timeoutMs = 15_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => {
      if (typeof request === 'function') request((chunk) => !socket.destroyed && socket.write(chunk));
      else socket.write(request);
    });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ ...parseAnswer(Buffer.concat(chunks)), elapsedMs: Date.now() - started });
    });
  });
}

function parseAnswer(bytes: Buffer): Omit<RawAnswer, 'elapsedMs'> {
  const text = bytes.toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  if (split === -1) return { status: 0, headers: {}, body: '' };
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = bytes.subarray(Buffer.byteLength(text.slice(0, split + 4), 'latin1'));
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = parseInt(body.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
