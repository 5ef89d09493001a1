import { invalidRequest } from '../errors.js';
import type { ModelItem, ModelPart } from '../protocol/model.js';
import { checkOutboundUrl, createGuardedFetch, OutboundBlockedError, outboundPolicy, resolveOutbound, type OutboundLookupOptions, type OutboundPolicy } from './outbound-guard.js';
import { abortSignalOf, type Cancellation } from '../util/abort.js';

/**
 * Image URLs in a turn's input, as the operator wants them to reach the model server:
 * - `inline` (default): the gateway fetches each http(s) image itself — through the outbound guard,
 *   redirects re-checked per hop, size- and time-capped — and hands the model a `data:` URL. The
 *   model server never opens a client-chosen URL, so the guard is the only way out.
 * - `forward`: the URL is passed on and the model server fetches it (outside the guard).
 * - `reject`: a request whose context holds an http(s) image URL is a 400.
 * Stored items keep the URL the client sent; the fetch happens per turn, once per distinct URL.
 */
export type ImageUrlMode = 'inline' | 'forward' | 'reject';

export interface ImageUrlOptions extends OutboundLookupOptions {
  mode: ImageUrlMode;
  maxBytes: number;
  outbound: Partial<OutboundPolicy>;
  /** Per image, DNS to last byte. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 3;
/** Images fetched at once for one turn. */
const CONCURRENCY = 4;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Rewrites the model-facing image parts of a turn: a message holding one is replaced in `items` by
 * a copy (model items of stored history are shared and frozen, never changed in place).
 */
export interface ImageUrlHandler {
  /**
   * `from`: the items before it are known to hold no image fetched over the network. Undefined
   * when there is nothing to fetch (every turn without an image URL: no promise, no microtask turn).
   */
  prepare(items: ModelItem[], signal: Cancellation, from?: number): Promise<void> | undefined;
}

export function createImageUrlHandler(options: ImageUrlOptions): ImageUrlHandler {
  if (options.mode === 'forward') return { prepare: () => undefined };
  if (options.mode === 'reject') {
    return {
      prepare(items, _signal, from = 0) {
        if (remoteImageParts(items, from).length > 0) {
          throw invalidRequest('Image URLs are not accepted by this gateway (limits.imageUrls is reject); send the image as a data URL instead.', 'input', 'image_url_not_allowed');
        }
        return undefined;
      },
    };
  }
  const policy = outboundPolicy(options.outbound);
  const lookup = options.lookup ? { lookup: options.lookup } : {};
  const guardedFetch = createGuardedFetch(policy, lookup);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function fetchImage(url: string, signal: Cancellation): Promise<string> {
    const deadline = AbortSignal.any([abortSignalOf(signal), AbortSignal.timeout(timeoutMs)]);
    let current = url;
    for (let redirects = 0; ; redirects++) {
      let response: Response;
      try {
        const target = checkOutboundUrl(current, policy);
        await resolveOutbound(target, policy, lookup);
        response = await guardedFetch(target.href, { method: 'GET', headers: { accept: 'image/*' }, signal: deadline });
      } catch (err) {
        throw imageError(url, err, signal, timeoutMs);
      }
      if (REDIRECT_STATUSES.has(response.status)) {
        await response.body?.cancel().catch(() => undefined);
        const location = response.headers.get('location');
        if (!location || redirects >= MAX_REDIRECTS) throw refused(url, `it redirects ${location ? `more than ${MAX_REDIRECTS} times` : 'without a Location'}`);
        try {
          current = new URL(location, current).href;
        } catch {
          throw refused(url, 'it redirects to an invalid URL');
        }
        continue;
      }
      if (response.status < 200 || response.status >= 300) {
        await response.body?.cancel().catch(() => undefined);
        throw refused(url, `it answered HTTP ${response.status}`);
      }
      const mediaType = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
      if (!/^image\/[a-z0-9.+-]+$/.test(mediaType)) {
        await response.body?.cancel().catch(() => undefined);
        throw refused(url, `its content type is not an image ('${mediaType.slice(0, 60)}')`);
      }
      const declared = Number(response.headers.get('content-length'));
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw refused(url, `it is larger than ${options.maxBytes} bytes`);
      }
      let bytes: Buffer;
      try {
        bytes = await readAtMost(response, options.maxBytes);
      } catch (err) {
        throw err instanceof ImageTooLarge ? refused(url, `it is larger than ${options.maxBytes} bytes`) : imageError(url, err, signal, timeoutMs);
      }
      return `data:${mediaType};base64,${bytes.toString('base64')}`;
    }
  }

  /** Replaces the image parts `parts` point at with data URLs of the fetched images. */
  async function inline(items: ModelItem[], parts: ReadonlyArray<{ index: number; part: ImagePart }>, signal: Cancellation): Promise<void> {
    const urls = [...new Set(parts.map((part) => part.part.url))];
    const inlined = new Map<string, string>();
    for (let i = 0; i < urls.length; i += CONCURRENCY) {
      const batch = urls.slice(i, i + CONCURRENCY);
      const data = await Promise.all(batch.map((url) => fetchImage(url, signal)));
      batch.forEach((url, j) => inlined.set(url, data[j]));
    }
    for (const index of new Set(parts.map((part) => part.index))) {
      const message = items[index] as Extract<ModelItem, { type: 'message' }>;
      items[index] = { ...message, content: message.content.map((part) => (part.type === 'image' && inlined.has(part.url) ? { ...part, url: inlined.get(part.url)! } : part)) };
    }
  }

  return {
    prepare(items, signal, from = 0) {
      const parts = remoteImageParts(items, from);
      return parts.length === 0 ? undefined : inline(items, parts, signal);
    },
  };
}

type ImagePart = { type: 'image'; url: string; detail?: string };

/** Whether a model item holds an image whose URL is fetched over the network (not `data:`). */
export function holdsRemoteImage(item: ModelItem): boolean {
  return item.type === 'message' && item.content.some(isRemoteImage);
}

const isRemoteImage = (part: ModelPart): part is ImagePart => part.type === 'image' && !part.url.startsWith('data:');

/** The image parts (of the items from `from` on) whose URL is fetched over the network, with the index of their item. */
function remoteImageParts(items: readonly ModelItem[], from: number): Array<{ index: number; part: ImagePart }> {
  const parts: Array<{ index: number; part: ImagePart }> = [];
  for (let index = from; index < items.length; index++) {
    const item = items[index];
    if (item.type !== 'message' || withoutRemoteImages.has(item)) continue;
    const before = parts.length;
    for (const part of item.content) if (isRemoteImage(part)) parts.push({ index, part });
    // shared history (frozen, the same objects every turn) is looked at once
    if (parts.length === before && Object.isFrozen(item)) withoutRemoteImages.add(item);
  }
  return parts;
}

/** Frozen model items known to hold no image fetched over the network. */
const withoutRemoteImages = new WeakSet<ModelItem>();

class ImageTooLarge extends Error {}

async function readAtMost(response: Response, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (!response.body) return Buffer.alloc(0);
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > limit) {
      await response.body.cancel().catch(() => undefined);
      throw new ImageTooLarge();
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** A URL as it may be quoted back: no credentials, no query (tokens live there), bounded. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    const text = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return '(an invalid URL)';
  }
}

function refused(url: string, why: string) {
  return invalidRequest(`The image at ${shown(url)} could not be used: ${why}.`, 'input', 'invalid_image_url');
}

function imageError(url: string, err: unknown, signal: Cancellation, timeoutMs: number) {
  if (signal.aborted) return err instanceof Error ? err : new Error('aborted');
  const cause = err instanceof OutboundBlockedError ? err : (err as { cause?: unknown } | null)?.cause;
  if (cause instanceof OutboundBlockedError) {
    return invalidRequest(`The image at ${shown(url)} is not allowed: the gateway does not fetch from that address.`, 'input', 'image_url_not_allowed');
  }
  if ((err as { name?: string } | null)?.name === 'TimeoutError') return refused(url, `it did not arrive within ${timeoutMs} ms`);
  const code = (err as { code?: string; cause?: { code?: string } } | null)?.cause?.code ?? (err as { code?: string } | null)?.code;
  return refused(url, `it could not be fetched${code ? ` (${code})` : ''}`);
}
