import { lookup as systemLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { bareAddress, blockedReason } from './ip-ranges.js';
import { redactUrl } from '../util/redact.js';
import { poolForAgent } from '../util/undici-clients.js';

/**
 * Guard for connections the gateway makes to URLs chosen by clients (MCP `server_url`, pages the
 * model opens): they must not reach the gateway's own network unless the operator allowed it.
 * Checked twice — after DNS resolution, to fail early with a clear message, and again at connect
 * time on the addresses actually dialled, so DNS rebinding between the two cannot slip through.
 */

export interface OutboundPolicy {
  /** Hostnames (exact, case-insensitive; a leading "*." matches subdomains) allowed even if they resolve to blocked addresses. */
  allowHosts: readonly string[];
  /** CIDR ranges (IPv4 or IPv6, e.g. "127.0.0.0/8", "::1/128") allowed even though blocked by default. */
  allowCidrs: readonly string[];
  /** Whether plain http: is allowed (https: always is). */
  allowHttp: boolean;
}

export const DEFAULT_OUTBOUND_POLICY: OutboundPolicy = Object.freeze({
  allowHosts: Object.freeze([]) as readonly string[],
  allowCidrs: Object.freeze([]) as readonly string[],
  allowHttp: false,
});

/** Injectable resolver (same signature as `dns.lookup`), so tests can map invented names without a network. */
export interface OutboundLookupOptions {
  lookup?: LookupFunction;
}

export interface GuardedFetchOptions extends OutboundLookupOptions {
  connectTimeoutMs?: number;
}

// Client URLs can be arbitrarily long; the error message is shown to the client and logged.
const MAX_URL_IN_MESSAGE = 200;

export class OutboundBlockedError extends Error {
  override readonly name = 'OutboundBlockedError';

  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    // the message reaches clients: never with the URL's credentials
    const safe = redactUrl(url);
    const shown = safe.length > MAX_URL_IN_MESSAGE ? `${safe.slice(0, MAX_URL_IN_MESSAGE)}…` : safe;
    super(`URL '${shown}' is not allowed: ${reason}`);
  }
}

/** Parses a policy from config-like input with validation (bad CIDR → throws Error naming it). */
export function outboundPolicy(input: Partial<OutboundPolicy>): OutboundPolicy {
  const allowHosts = stringList(input.allowHosts ?? [], 'allowHosts');
  const allowCidrs = stringList(input.allowCidrs ?? [], 'allowCidrs');
  for (const host of allowHosts) {
    if (host.trim() === '' || host.trim() === '*.') throw new Error(`Invalid outbound allowHosts entry '${host}': empty hostname`);
  }
  for (const cidr of allowCidrs) parseCidr(cidr);
  const allowHttp = input.allowHttp ?? false;
  if (typeof allowHttp !== 'boolean') throw new Error('Invalid outbound allowHttp: expected a boolean');
  return Object.freeze({ allowHosts: Object.freeze([...allowHosts]), allowCidrs: Object.freeze([...allowCidrs]), allowHttp });
}

function stringList(value: unknown, name: string): readonly string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new Error(`Invalid outbound ${name}: expected an array of strings`);
  }
  return value;
}

/** "10.0.0.0/8" → its parts; a bare address means that single address. Throws naming the entry. */
function parseCidr(cidr: string): { network: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const match = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(cidr.trim());
  const network = match?.[1] ?? '';
  const version = isIP(network);
  const maxPrefix = version === 6 ? 128 : 32;
  const prefix = match?.[2] === undefined ? maxPrefix : Number(match[2]);
  // A zone id would be silently meaningless in a range, so it is rejected rather than ignored.
  if (version === 0 || network.includes('%') || prefix > maxPrefix) {
    throw new Error(`Invalid outbound allowCidrs entry '${cidr}': expected an IPv4 or IPv6 CIDR like "10.0.0.0/8" or "fd00::/8"`);
  }
  return { network, prefix, family: version === 6 ? 'ipv6' : 'ipv4' };
}

// Policies are immutable values, so their allow-list is built once and shared by every check.
const allowListCache = new WeakMap<OutboundPolicy, BlockList>();

function allowList(policy: OutboundPolicy): BlockList {
  let list = allowListCache.get(policy);
  if (!list) {
    list = new BlockList();
    for (const cidr of policy.allowCidrs) {
      const { network, prefix, family } = parseCidr(cidr);
      list.addSubnet(network, prefix, family);
    }
    allowListCache.set(policy, list);
  }
  return list;
}

/** Lowercase, no brackets, no trailing root dot: the form hostnames are compared in. */
function normalizeHost(host: string): string {
  return bareAddress(host.trim().toLowerCase()).replace(/\.$/, '');
}

function hostAllowed(host: string, policy: OutboundPolicy): boolean {
  const name = normalizeHost(host);
  return policy.allowHosts.some((entry) => {
    const pattern = normalizeHost(entry);
    return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern;
  });
}

/** Why connecting to `address` is refused under `policy`, or null when it may be dialled. */
function addressRefusal(address: string, policy: OutboundPolicy): string | null {
  const bare = bareAddress(address);
  const family = isIP(bare);
  if (family !== 0 && allowList(policy).check(bare, family === 6 ? 'ipv6' : 'ipv4')) return null;
  return blockedReason(bare);
}

/** The first refusal among a name's resolved addresses: one blocked address taints the name. */
function resolvedRefusal(host: string, addresses: readonly string[], policy: OutboundPolicy): string | null {
  if (hostAllowed(host, policy)) return null;
  if (addresses.length === 0) return `${host} did not resolve to any address`;
  for (const address of addresses) {
    const reason = addressRefusal(address, policy);
    if (reason) return `${host} resolves to ${address}, ${reason}`;
  }
  return null;
}

/**
 * Synchronous checks: a parseable http(s) URL (http: only if allowed, or the host is in
 * allowHosts), and a literal IP host outside the blocked ranges. The WHATWG parser has already
 * normalized odd IPv4 spellings (`0x7f.1`, `2130706433`, `0177.0.0.1`) to dotted form here.
 * Returns the parsed URL.
 */
export function checkOutboundUrl(raw: string, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundBlockedError(raw, 'it is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new OutboundBlockedError(raw, `the scheme '${url.protocol}' is not supported (only http: and https:)`);
  }
  const host = bareAddress(url.hostname);
  const allowedHost = hostAllowed(host, policy);
  if (url.protocol === 'http:' && !policy.allowHttp && !allowedHost) {
    throw new OutboundBlockedError(raw, 'plain http: is not allowed, use https:');
  }
  if (!allowedHost && isIP(host) !== 0) {
    const reason = addressRefusal(host, policy);
    if (reason) throw new OutboundBlockedError(raw, `${host} is ${reason}`);
  }
  return url;
}

/** Every address `hostname` resolves to, through the injected lookup or the system resolver. */
function lookupAll(hostname: string, lookup: LookupFunction | undefined): Promise<string[]> {
  if (!lookup) return systemLookup(hostname, { all: true }).then((found) => found.map((entry) => entry.address));
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true }, (err, found) => {
      if (err) reject(err);
      else resolve(Array.isArray(found) ? found.map((entry) => entry.address) : [found]);
    });
  });
}

/**
 * Resolves the hostname (all A/AAAA records) and rejects if ANY address is blocked, unless the
 * host or the address is allowed. Literal IPs skip DNS. Resolution failures reject with the
 * resolver's own error (e.g. ENOTFOUND), not an OutboundBlockedError.
 */
export async function resolveOutbound(url: URL, policy: OutboundPolicy, options: OutboundLookupOptions = {}): Promise<string[]> {
  checkOutboundUrl(url.href, policy);
  const host = bareAddress(url.hostname);
  if (isIP(host) !== 0) return [host];
  const addresses = await lookupAll(host, options.lookup);
  const refusal = resolvedRefusal(host, addresses, policy);
  if (refusal) throw new OutboundBlockedError(url.href, refusal);
  return addresses;
}

function wantedFamily(options: LookupOptions): 4 | 6 | 0 {
  const family = options.family as unknown;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/**
 * A `lookup` for net/tls.connect that refuses names resolving to blocked addresses. Node calls
 * it for the actual dial, so what is checked is exactly what gets connected to. The error's
 * `url` is provisional (only the hostname is known here); the guarded fetch restates it.
 */
function guardedLookup(policy: OutboundPolicy, lookup: LookupFunction | undefined): LookupFunction {
  return (hostname, options, callback) => {
    lookupAll(hostname, lookup).then(
      (addresses) => {
        const refusal = resolvedRefusal(hostname, addresses, policy);
        if (refusal) return callback(new OutboundBlockedError(hostname, refusal), '');
        const family = wantedFamily(options);
        const usable: LookupAddress[] = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((entry) => entry.family !== 0 && (family === 0 || entry.family === family));
        const first = usable[0];
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          return callback(err, '');
        }
        if (options.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * Node skips `lookup` for literal IP hosts, so the connector checks those itself. The guarded
 * fetch has already refused them via checkOutboundUrl; this is the backstop that keeps the
 * connect-time guarantee independent of that.
 */
function guardedConnector(policy: OutboundPolicy, options: GuardedFetchOptions): buildConnector.connector {
  const connect = buildConnector({
    lookup: guardedLookup(policy, options.lookup),
    ...(options.connectTimeoutMs !== undefined ? { timeout: options.connectTimeoutMs } : {}),
  });
  return (connectOptions, callback) => {
    const host = bareAddress(connectOptions.hostname);
    if (isIP(host) !== 0 && !hostAllowed(host, policy)) {
      const reason = addressRefusal(host, policy);
      if (reason) return callback(new OutboundBlockedError(`${connectOptions.protocol}//${connectOptions.hostname}`, `${host} is ${reason}`), null);
    }
    connect(connectOptions, callback);
  };
}

/** The target URL of a fetch input, as a string. */
function inputUrl(input: string | URL | Request): string {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  return input.url;
}

// Refusals surface like any other fetch network failure (TypeError with a `cause`), so callers
// handle one shape whether the URL was refused up front or at connect time.
const fetchFailed = (cause: OutboundBlockedError) => new TypeError('fetch failed', { cause });

/**
 * A fetch (same signature as global fetch) that enforces `policy`: the URL is checked first, every
 * address is checked again at connect time (a blocked one means the connection is never opened
 * and the fetch rejects with `cause` an OutboundBlockedError), and redirects are never followed —
 * a 3xx is returned to the caller, whose next hop would need its own check.
 * It does not resolve up front; call resolveOutbound first for an early, clear refusal.
 */
export function createGuardedFetch(policy: OutboundPolicy, options: GuardedFetchOptions = {}): typeof fetch {
  // no connection opened again for a fetch aborted mid-body (util/undici-clients.ts)
  const dispatcher = new Agent({ connect: guardedConnector(policy, options), factory: poolForAgent });
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const raw = inputUrl(input);
    let url: URL;
    try {
      url = checkOutboundUrl(raw, policy);
    } catch (err) {
      throw err instanceof OutboundBlockedError ? fetchFailed(err) : err;
    }
    // A global Request is not undici's Request class, so its parts are passed as plain init.
    const fromRequest =
      typeof input === 'object' && !(input instanceof URL)
        ? { method: input.method, headers: input.headers, body: input.body, signal: input.signal, duplex: 'half' }
        : {};
    const requestInit = { ...fromRequest, ...init, redirect: 'manual', dispatcher } as Parameters<typeof undiciFetch>[1];
    try {
      return (await undiciFetch(url.href, requestInit)) as unknown as Response;
    } catch (err) {
      const cause = err instanceof Error ? err.cause : undefined;
      if (cause instanceof OutboundBlockedError) throw fetchFailed(new OutboundBlockedError(url.href, cause.reason));
      throw err;
    }
  };
  return guarded as typeof fetch;
}
