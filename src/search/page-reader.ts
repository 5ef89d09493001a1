import type { LookupFunction } from 'node:net';
import { TextDecoder } from 'node:util';
import { checkOutboundUrl, createGuardedFetch, OutboundBlockedError, resolveOutbound, type OutboundPolicy } from '../net/outbound-guard.js';
import { describeNetworkError } from '../net/network-error.js';
import { htmlToText } from './html-to-text.js';
import { untilAborted } from '../util/abort.js';

/**
 * Opens pages for the model (`open_page` / `find_in_page`): URLs come from search results or the
 * model itself, so every hop goes through the outbound guard — checked and resolved before it is
 * dialled, dialled through the guarded fetch (which re-checks the addresses it actually connects
 * to), with redirects followed here, one checked hop at a time.
 */

export interface Page {
  url: string;
  finalUrl: string;
  title: string;
  text: string;
  truncated: boolean;
  contentType: string;
}

export class PageReadError extends Error {
  override readonly name = 'PageReadError';
  /** Refused by the outbound guard. */
  readonly blocked: boolean;
  /** The HTTP status, when the page answered with an error. */
  readonly status?: number;

  constructor(message: string, options: { blocked?: boolean; status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.blocked = options.blocked ?? false;
    if (options.status !== undefined) this.status = options.status;
  }
}

export interface PageReaderOptions {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  lookup?: LookupFunction;
}

export interface PageReader {
  read(url: string, signal: AbortSignal): Promise<Page>;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_URL_IN_MESSAGE = 200;
const REQUEST_HEADERS = {
  accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5',
  'user-agent': 'Mozilla/5.0 (compatible; Switchyard web_search page reader)',
};

function shown(url: string): string {
  return url.length > MAX_URL_IN_MESSAGE ? `${url.slice(0, MAX_URL_IN_MESSAGE)}…` : url;
}

type Kind = 'html' | 'text' | 'unsupported' | 'unknown';

/** How a media type is read: HTML reduced to text, text and JSON/XML passed through, anything else refused. */
function kindOf(mediaType: string): Kind {
  if (mediaType === '') return 'unknown';
  if (mediaType === 'text/html' || mediaType === 'application/xhtml+xml') return 'html';
  if (mediaType.startsWith('text/')) return 'text';
  if (/^application\/(?:json|xml|(?:[\w.-]+\+)(?:json|xml)|x-ndjson|ndjson|javascript|x-javascript|yaml|x-yaml|toml)$/.test(mediaType)) return 'text';
  return 'unsupported';
}

function parseContentType(header: string | null): { mediaType: string; charset?: string } {
  if (!header) return { mediaType: '' };
  const [type, ...params] = header.split(';');
  const mediaType = (type ?? '').trim().toLowerCase();
  for (const param of params) {
    const match = /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(param);
    if (match) return { mediaType, charset: (match[1] as string).toLowerCase() };
  }
  return { mediaType };
}

/** The charset an HTML document declares in its first 1024 bytes (`<meta charset>` or http-equiv). */
function sniffHtmlCharset(bytes: Uint8Array): string | undefined {
  const head = Buffer.from(bytes.subarray(0, 1024)).toString('latin1');
  return /<meta[^>]{0,200}?charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1]?.toLowerCase();
}

function bomCharset(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

function decode(bytes: Uint8Array, charset: string | undefined, truncated: boolean): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset ?? 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  let text = decoder.decode(bytes);
  // A cut in the middle of a multi-byte character leaves a replacement character at the end.
  if (truncated && text.endsWith('\ufffd')) text = text.slice(0, -1);
  return text;
}

/** What a body without a Content-Type is: binary (NUL bytes), HTML (starts like markup), or text. */
function sniffKind(bytes: Uint8Array): { kind: Kind; mediaType: string } {
  const head = bytes.subarray(0, 1024);
  if (head.includes(0)) return { kind: 'unsupported', mediaType: 'application/octet-stream' };
  const start = Buffer.from(head).toString('latin1').trimStart().toLowerCase();
  if (/^<(?:!doctype html|html|head|body|title|p|div|h1|!--)/.test(start)) return { kind: 'html', mediaType: 'text/html' };
  return { kind: 'text', mediaType: 'text/plain' };
}


/** Reads at most `maxBytes` of a body; more is cut (and the rest of the stream cancelled). */
async function readCapped(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!body) return { bytes: new Uint8Array(0), truncated: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - total));
      total = maxBytes;
      truncated = true;
      await reader.cancel().catch(() => {});
      break;
    }
    chunks.push(value);
    total += value.byteLength;
  }
  return { bytes: Buffer.concat(chunks, total), truncated };
}

function blockedCause(err: unknown): OutboundBlockedError | undefined {
  if (err instanceof OutboundBlockedError) return err;
  if (err instanceof Error && err.cause instanceof OutboundBlockedError) return err.cause;
  return undefined;
}

/**
 * Fetches pages through the outbound guard: checkOutboundUrl + resolveOutbound before each hop;
 * redirects followed manually up to maxRedirects, each hop re-checked (a redirect to a private
 * address is refused); body read up to maxBytes (then cut, truncated=true) within timeoutMs; HTML
 * reduced to readable text; text/plain and JSON passed through; other types (images, PDFs) →
 * PageReadError "unsupported content type".
 */
export function createPageReader(policy: OutboundPolicy, options: PageReaderOptions): PageReader {
  const lookupOptions = options.lookup ? { lookup: options.lookup } : {};
  const guardedFetch = createGuardedFetch(policy, lookupOptions);

  async function fetchPage(url: string, signal: AbortSignal): Promise<Page> {
    let current = url;
    for (let redirects = 0; ; redirects++) {
      const target = checkOutboundUrl(current, policy);
      await untilAborted(resolveOutbound(target, policy, lookupOptions), signal);
      const response = await guardedFetch(target.href, { method: 'GET', headers: REQUEST_HEADERS, signal });

      if (REDIRECT_STATUSES.has(response.status)) {
        await response.body?.cancel().catch(() => {});
        const location = response.headers.get('location');
        if (!location) throw new PageReadError(`${shown(target.href)} answered ${response.status} without a Location header`, { status: response.status });
        if (redirects >= options.maxRedirects) throw new PageReadError(`Too many redirects opening ${shown(url)} (more than ${options.maxRedirects})`);
        try {
          current = new URL(location, target).href;
        } catch {
          throw new PageReadError(`${shown(target.href)} redirected to an invalid URL`);
        }
        continue;
      }

      if (response.status < 200 || response.status >= 300) {
        await response.body?.cancel().catch(() => {});
        throw new PageReadError(`${shown(target.href)} answered HTTP ${response.status}`, { status: response.status });
      }

      const { mediaType, charset } = parseContentType(response.headers.get('content-type'));
      let kind = kindOf(mediaType);
      if (kind === 'unsupported') {
        await response.body?.cancel().catch(() => {});
        throw new PageReadError(`${shown(target.href)} has an unsupported content type '${mediaType}' (only HTML, text and JSON pages can be read)`);
      }
      const { bytes, truncated } = await readCapped(response.body, options.maxBytes);
      let contentType = mediaType;
      if (kind === 'unknown') {
        const sniffed = sniffKind(bytes);
        kind = sniffed.kind;
        contentType = sniffed.mediaType;
        if (kind === 'unsupported') throw new PageReadError(`${shown(target.href)} has an unsupported content type (binary data without a Content-Type)`);
      }
      const encoding = bomCharset(bytes) ?? charset ?? (kind === 'html' ? sniffHtmlCharset(bytes) : undefined);
      const body = decode(bytes, encoding, truncated);
      if (kind === 'html') {
        const { title, text } = htmlToText(body);
        return { url, finalUrl: target.href, title, text, truncated, contentType };
      }
      return { url, finalUrl: target.href, title: '', text: body.replace(/\r\n?/g, '\n'), truncated, contentType };
    }
  }

  return {
    async read(url: string, signal: AbortSignal): Promise<Page> {
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const combined = AbortSignal.any([signal, timeout]);
      try {
        return await fetchPage(url, combined);
      } catch (err) {
        if (signal.aborted) throw signal.reason ?? err;
        if (err instanceof PageReadError) throw err;
        const blocked = blockedCause(err);
        if (blocked) throw new PageReadError(blocked.message, { blocked: true, cause: blocked });
        if (timeout.aborted) throw new PageReadError(`Timed out after ${options.timeoutMs} ms opening ${shown(url)}`, { cause: err });
        throw new PageReadError(`Could not open ${shown(url)}: ${describeNetworkError(err)}`, { cause: err });
      }
    },
  };
}

/**
 * Finds `pattern` (case-insensitive plain text, not regex; runs of whitespace match any
 * whitespace) in page text: up to `max` matches with ~200 chars of context each, and their
 * character offsets.
 */
export function findInText(text: string, pattern: string, max = 10): Array<{ index: number; context: string }> {
  const tokens = pattern.trim().split(/\s+/).filter((t) => t !== '');
  if (tokens.length === 0 || max <= 0) return [];
  const source = tokens.map((t) => t.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('\\s+');
  const re = new RegExp(source, 'giu');
  const out: Array<{ index: number; context: string }> = [];
  const radius = 100;
  let match: RegExpExecArray | null;
  while (out.length < max && (match = re.exec(text)) !== null) {
    const index = match.index;
    const end = index + match[0].length;
    let from = Math.max(0, index - radius);
    let to = Math.min(text.length, end + radius);
    // Start and end on word boundaries when one is near.
    if (from > 0) {
      const space = text.slice(from, index).search(/\s/);
      if (space >= 0 && space < 30) from += space + 1;
    }
    if (to < text.length) {
      const tail = text.slice(end, to);
      const lastSpace = Math.max(tail.lastIndexOf(' '), tail.lastIndexOf('\n'));
      if (lastSpace >= 0 && tail.length - lastSpace < 30) to = end + lastSpace;
    }
    const context = `${from > 0 ? '…' : ''}${text.slice(from, to).replace(/\s+/g, ' ').trim()}${to < text.length ? '…' : ''}`;
    out.push({ index, context });
    if (match[0].length === 0) re.lastIndex++;
  }
  return out;
}
