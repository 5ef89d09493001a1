import { lookup as systemLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import net, { type AddressInfo, type LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockedReason } from '../../src/net/ip-ranges.js';
import {
  DEFAULT_OUTBOUND_POLICY,
  OutboundBlockedError,
  checkOutboundUrl,
  createGuardedFetch,
  outboundPolicy,
  resolveOutbound,
} from '../../src/net/outbound-guard.js';

// A public address that invented names may resolve to. It is only ever checked, never dialled.
const PUBLIC = '93.184.216.34';

/**
 * A resolver for invented names, so DNS cases run offline. `localhost` goes to the system resolver
 * (answered from /etc/hosts); any other unknown name fails rather than leaking to real DNS.
 */
function fakeLookup(names: Record<string, string[] | (() => string[])>): LookupFunction {
  return (hostname, options, callback) => {
    const entry = names[hostname.toLowerCase()];
    if (entry === undefined && hostname === 'localhost') return systemLookup(hostname, options, callback);
    if (entry === undefined) {
      const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      return process.nextTick(() => callback(err, ''));
    }
    const found: LookupAddress[] = (typeof entry === 'function' ? entry() : entry).map((address) => ({ address, family: net.isIP(address) }));
    process.nextTick(() => (options.all ? callback(null, found) : callback(null, found[0]!.address, found[0]!.family)));
  };
}

/** The OutboundBlockedError a guarded fetch rejected with (always as the `cause` of a TypeError). */
async function refusal(promise: Promise<unknown>): Promise<OutboundBlockedError> {
  const err = await promise.then(
    () => expect.unreachable('the fetch should have been refused'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TypeError);
  const cause = (err as Error).cause;
  expect(cause).toBeInstanceOf(OutboundBlockedError);
  return cause as OutboundBlockedError;
}

function syncRefusal(fn: () => unknown): OutboundBlockedError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundBlockedError);
    return err as OutboundBlockedError;
  }
  return expect.unreachable('expected an OutboundBlockedError');
}

describe('blockedReason', () => {
  const blocked: Array<[string, RegExp]> = [
    ['0.0.0.0', /this network/],
    ['0.255.255.255', /this network/],
    ['10.0.0.0', /private/],
    ['10.255.255.255', /private/],
    ['172.16.0.0', /private/],
    ['172.31.255.255', /private/],
    ['192.168.0.1', /private/],
    ['192.168.255.255', /private/],
    ['127.0.0.1', /loopback/],
    ['127.255.255.255', /loopback/],
    ['169.254.0.1', /link-local/],
    ['169.254.255.255', /link-local/],
    ['169.254.169.254', /cloud metadata/],
    ['100.64.0.0', /CGNAT/],
    ['100.127.255.255', /CGNAT/],
    ['192.0.0.8', /special-purpose/],
    ['192.0.2.1', /documentation/],
    ['198.51.100.7', /documentation/],
    ['203.0.113.255', /documentation/],
    ['198.18.0.1', /benchmarking/],
    ['198.19.255.255', /benchmarking/],
    ['224.0.0.1', /multicast/],
    ['239.255.255.250', /multicast/],
    ['240.0.0.1', /reserved/],
    ['255.255.255.254', /reserved/],
    ['255.255.255.255', /broadcast/],
    ['::', /unspecified/],
    ['::1', /loopback/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['[::1]', /loopback/],
    ['fc00::1', /unique local/],
    ['fdff:ffff::1', /unique local/],
    ['fd00:ec2::254', /cloud metadata/],
    ['fe80::1', /link-local/],
    ['fe80::1%eth0', /link-local/],
    ['febf:ffff::1', /link-local/],
    ['fec0::1', /site-local/],
    ['ff02::1', /multicast/],
    ['100::1', /discard/],
    ['2001:db8::1', /documentation/],
    ['::ffff:127.0.0.1', /loopback.*127\.0\.0\.1 embedded in an IPv4-mapped/],
    ['::ffff:7f00:1', /loopback.*IPv4-mapped/],
    ['::FFFF:7F00:0001', /loopback.*IPv4-mapped/],
    ['::ffff:10.1.2.3', /private/],
    ['::ffff:a9fe:a9fe', /cloud metadata/],
    ['::ffff:0:127.0.0.1', /loopback.*IPv4-translated/],
    ['::127.0.0.1', /loopback.*IPv4-compatible/],
    ['::7f00:1', /loopback.*IPv4-compatible/],
    ['::192.168.1.1', /private.*IPv4-compatible/],
    ['64:ff9b::127.0.0.1', /loopback.*NAT64/],
    ['64:ff9b::a9fe:a9fe', /cloud metadata.*NAT64/],
    ['2002:7f00:1::', /loopback.*6to4/],
    ['2002:a00:1:1234::1', /private.*6to4/],
    ['not-an-ip', /not a valid IP/],
    ['', /not a valid IP/],
  ];
  it.each(blocked)('%s is blocked', (ip, reason) => {
    expect(blockedReason(ip)).toMatch(reason);
  });

  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '100.63.255.255',
    '192.169.0.1',
    '169.253.255.255',
    '11.0.0.1',
    '223.255.255.255',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
    '2a00:1450:4001::1',
  ];
  it.each(allowed)('%s is public', (ip) => {
    expect(blockedReason(ip)).toBeNull();
  });
});

describe('SSRF table: nothing reaches the canaries', () => {
  const policy = outboundPolicy({ allowHttp: true });
  let canary4: net.Server;
  let canary6: net.Server | undefined;
  let ipv6Skip = '';
  let connections = 0;
  let port = 0;
  let port6 = 0;

  const listen = (server: net.Server, host: string) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
    });

  beforeAll(async () => {
    const count = (socket: net.Socket) => {
      connections += 1;
      socket.destroy();
    };
    canary4 = net.createServer(count);
    port = await listen(canary4, '127.0.0.1');
    const server6 = net.createServer(count);
    try {
      port6 = await listen(server6, '::1');
      canary6 = server6;
    } catch (err) {
      ipv6Skip = `IPv6 loopback ::1 cannot be bound here (${(err as NodeJS.ErrnoException).code})`;
    }
  });

  afterAll(async () => {
    await new Promise((resolve) => canary4.close(resolve));
    if (canary6) await new Promise((resolve) => canary6!.close(resolve));
  });

  const names = (): Record<string, string[] | (() => string[])> => ({
    'rebind.test': ['127.0.0.1'],
    'private.test': ['10.0.0.1'],
    'mixed.test': [PUBLIC, '127.0.0.1'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'zero.test': ['0.0.0.0'],
    'metadata.test': ['169.254.169.254'],
    'cgnat.test': ['100.64.0.1'],
    'localhost.': ['127.0.0.1'],
    'app.localhost': ['127.0.0.1'],
    'v6loop.test': ['::1'],
    'nat64.test': ['64:ff9b::7f00:1'],
  });

  // Literal hosts pointing (after normalization) at the 127.0.0.1 canary or the loopback net.
  const literalLoopback = (p: number) => [
    `http://127.0.0.1:${p}/`,
    `https://127.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://2130706433:${p}/`,
    `http://017700000001:${p}/`,
    `http://0177.0.0.1:${p}/`,
    `http://0x7f.0x0.0x0.0x1:${p}/`,
    `http://0x7f.1:${p}/`,
    `http://127.0.0.1.:${p}/`,
    `http://%31%32%37.0.0.1:${p}/`,
    `http://\u2460\u2461\u2466.0.0.1:${p}/`,
    `http://user:secret@127.0.0.1:${p}/`,
    `http://127.0.0.1:${p}/mcp?x=1#frag`,
    `http://127.0.0.2:${p}/`,
    `http://127.255.255.254:${p}/`,
    `http://0.0.0.0:${p}/`,
    `http://0:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:0:127.0.0.1]:${p}/`,
    `http://[::127.0.0.1]:${p}/`,
    `http://[64:ff9b::127.0.0.1]:${p}/`,
    `http://[2002:7f00:1::]:${p}/`,
  ];

  // Names that resolve (through the fake or system resolver) to blocked addresses.
  const namesAt = (p: number) => [
    `http://localhost:${p}/`,
    `http://LOCALHOST:${p}/`,
    `http://localhost.:${p}/`,
    `http://app.localhost:${p}/`,
    `http://rebind.test:${p}/`,
    `http://mixed.test:${p}/`,
    `http://mapped.test:${p}/`,
    `http://zero.test:${p}/`,
    `http://nat64.test:${p}/`,
    `http://v6loop.test:${p}/`,
    `https://rebind.test:${p}/`,
  ];

  // Literal private / link-local / CGNAT / metadata targets, with the range the refusal must name.
  const literalElsewhere = (p: number): Array<[string, RegExp]> => [
    [`http://10.0.0.1:${p}/mcp`, /10\.0\.0\.1 is a private address/],
    [`http://172.16.0.1:${p}/`, /private/],
    [`http://172.31.255.255:${p}/`, /private/],
    [`http://192.168.1.1:${p}/`, /private/],
    [`http://169.254.169.254:${p}/latest/meta-data/`, /cloud metadata/],
    [`http://0xa9fea9fe:${p}/`, /169\.254\.169\.254 is a cloud metadata/],
    [`http://2852039166:${p}/`, /cloud metadata/],
    [`http://[::ffff:a9fe:a9fe]:${p}/`, /cloud metadata/],
    [`http://[fd00:ec2::254]:${p}/`, /cloud metadata/],
    [`http://169.254.1.1:${p}/`, /link-local/],
    [`http://[fe80::1]:${p}/`, /link-local/],
    [`http://100.64.0.1:${p}/`, /CGNAT/],
    [`http://100.127.255.255:${p}/`, /CGNAT/],
    [`http://[fc00::1]:${p}/`, /unique local/],
    [`http://[fec0::1]:${p}/`, /site-local/],
    [`http://224.0.0.1:${p}/`, /multicast/],
    [`http://[ff02::1]:${p}/`, /multicast/],
    [`http://240.0.0.1:${p}/`, /reserved/],
    [`http://255.255.255.255:${p}/`, /broadcast/],
    [`http://192.0.2.1:${p}/`, /documentation/],
    [`http://198.18.0.1:${p}/`, /benchmarking/],
    [`http://[2001:db8::1]:${p}/`, /documentation/],
    [`http://[100::1]:${p}/`, /discard/],
    [`http://[::ffff:10.0.0.1]:${p}/`, /private/],
  ];

  const resolvedElsewhere: Array<[string, RegExp]> = [
    ['http://private.test/', /private\.test resolves to 10\.0\.0\.1, a private address/],
    ['http://metadata.test/', /cloud metadata/],
    ['http://cgnat.test/', /CGNAT/],
  ];

  it('refuses every URL in the table, up front and at fetch time', async () => {
    const lookup = fakeLookup(names());
    const guarded = createGuardedFetch(policy, { lookup });
    let checked = 0;

    for (const url of literalLoopback(port)) {
      expect(syncRefusal(() => checkOutboundUrl(url, policy)).reason, url).toMatch(/loopback|this network|unspecified/);
      await expect(resolveOutbound(new URL(url), policy, { lookup }), url).rejects.toBeInstanceOf(OutboundBlockedError);
      expect((await refusal(guarded(url))).reason, url).toMatch(/loopback|this network|unspecified/);
      checked++;
    }
    for (const url of namesAt(port)) {
      expect(checkOutboundUrl(url, policy).href).toBe(new URL(url).href); // a name passes the sync check…
      const early = await resolveOutbound(new URL(url), policy, { lookup }).catch((e: unknown) => e);
      expect(early, url).toBeInstanceOf(OutboundBlockedError); // …but not resolution
      expect((early as OutboundBlockedError).reason).toMatch(/resolves to .*(loopback|this network)/);
      const late = await refusal(guarded(url));
      expect(late.url).toBe(new URL(url).href);
      expect(late.message).toContain(`URL '${new URL(url).href}' is not allowed: `);
      checked++;
    }
    for (const [url, reason] of literalElsewhere(port)) {
      expect(syncRefusal(() => checkOutboundUrl(url, policy)).reason, url).toMatch(reason);
      expect((await refusal(guarded(url))).reason, url).toMatch(reason);
      checked++;
    }
    for (const [url, reason] of resolvedElsewhere) {
      await expect(resolveOutbound(new URL(url), policy, { lookup }), url).rejects.toThrow(reason);
      expect((await refusal(guarded(url))).reason, url).toMatch(reason);
      checked++;
    }

    expect(checked).toBeGreaterThanOrEqual(50);
    expect(connections).toBe(0);
  });

  it('catches DNS rebinding at connect time', async () => {
    let calls = 0;
    // First answer public (passes the early check), every later answer loopback.
    const lookup = fakeLookup({ 'flip.test': () => (++calls === 1 ? [PUBLIC] : ['127.0.0.1']) });
    const url = `http://flip.test:${port}/`;
    expect(await resolveOutbound(new URL(url), policy, { lookup })).toEqual([PUBLIC]);
    const err = await refusal(createGuardedFetch(policy, { lookup })(url));
    expect(err.reason).toBe('flip.test resolves to 127.0.0.1, a loopback address');
    expect(err.message).toBe(`URL '${url}' is not allowed: flip.test resolves to 127.0.0.1, a loopback address`);
    expect(calls).toBe(2);
    expect(connections).toBe(0);
  });

  it('refuses IPv6 loopback URLs aimed at the ::1 canary', async (ctx) => {
    if (!canary6) return ctx.skip(ipv6Skip);
    const lookup = fakeLookup({ ...names(), localhost: ['::1', '127.0.0.1'] });
    const guarded = createGuardedFetch(policy, { lookup });
    const literals = [
      `http://[::1]:${port6}/`,
      `https://[::1]:${port6}/`,
      `http://[0:0:0:0:0:0:0:1]:${port6}/`,
      `http://[0000::0001]:${port6}/`,
      `http://[::0.0.0.1]:${port6}/`,
      `http://[::]:${port6}/`,
    ];
    for (const url of literals) {
      expect(syncRefusal(() => checkOutboundUrl(url, policy)).reason, url).toMatch(/loopback|unspecified/);
      expect((await refusal(guarded(url))).reason, url).toMatch(/loopback|unspecified/);
    }
    for (const url of [`http://localhost:${port6}/`, `http://v6loop.test:${port6}/`]) {
      await expect(resolveOutbound(new URL(url), policy, { lookup })).rejects.toThrow(/loopback/);
      expect((await refusal(guarded(url))).reason, url).toMatch(/loopback/);
    }
    expect(connections).toBe(0);
  });

  // Positive control, last on purpose: the zero counts above mean something only if a real
  // connection would have been counted.
  it('the canary does count a direct connection', async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('error', reject);
      socket.once('close', () => resolve());
    });
    expect(connections).toBe(1);
  });
});

describe('allowed when configured', () => {
  let server: http.Server;
  let port = 0;
  const hits: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/second` }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fetches a loopback server inside allowCidrs when http is allowed', async () => {
    const policy = outboundPolicy({ allowCidrs: ['127.0.0.0/8'], allowHttp: true });
    const url = `http://127.0.0.1:${port}/hello`;
    expect(checkOutboundUrl(url, policy).port).toBe(String(port));
    expect(await resolveOutbound(new URL(url), policy)).toEqual(['127.0.0.1']);
    const res = await createGuardedFetch(policy, { connectTimeoutMs: 1000 })(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
    // The allowance is exact: the rest of the blocked space stays blocked.
    expect(() => checkOutboundUrl(`http://10.0.0.1:${port}/`, policy)).toThrow(/private/);
  });

  it('fetches an allowed host, which also permits plain http for it', async () => {
    const lookup = fakeLookup({ localhost: ['127.0.0.1'], 'mcp.internal.test': ['127.0.0.1'], 'internal.test': ['127.0.0.1'] });
    const policy = outboundPolicy({ allowHosts: ['LocalHost', '*.internal.test'] });
    for (const url of [`http://localhost:${port}/a`, `http://mcp.internal.test:${port}/b`]) {
      expect(await resolveOutbound(new URL(url), policy, { lookup })).toEqual(['127.0.0.1']);
      const res = await createGuardedFetch(policy, { lookup })(url);
      expect(await res.text()).toBe('ok');
    }
    // "*." covers subdomains, not the bare domain, and never other hosts.
    expect(() => checkOutboundUrl(`http://internal.test:${port}/`, policy)).toThrow(/plain http/);
    await expect(createGuardedFetch({ ...policy, allowHttp: true }, { lookup })(`http://internal.test:${port}/`)).rejects.toMatchObject({
      cause: { reason: 'internal.test resolves to 127.0.0.1, a loopback address' },
    });
    expect(hits).toEqual(expect.arrayContaining(['/a', '/b']));
  });

  it('accepts only http(s), and http only when allowed', () => {
    expect(syncRefusal(() => checkOutboundUrl('http://93.184.216.34/mcp', DEFAULT_OUTBOUND_POLICY)).message).toBe(
      "URL 'http://93.184.216.34/mcp' is not allowed: plain http: is not allowed, use https:",
    );
    expect(checkOutboundUrl('https://93.184.216.34/mcp', DEFAULT_OUTBOUND_POLICY).hostname).toBe('93.184.216.34');
    expect(checkOutboundUrl('http://93.184.216.34/mcp', { ...DEFAULT_OUTBOUND_POLICY, allowHttp: true }).protocol).toBe('http:');
    expect(syncRefusal(() => checkOutboundUrl('ftp://93.184.216.34/', DEFAULT_OUTBOUND_POLICY)).reason).toMatch(/scheme 'ftp:'/);
    expect(syncRefusal(() => checkOutboundUrl('file:///etc/passwd', DEFAULT_OUTBOUND_POLICY)).reason).toMatch(/scheme 'file:'/);
    expect(syncRefusal(() => checkOutboundUrl('not a url', DEFAULT_OUTBOUND_POLICY)).reason).toBe('it is not a valid URL');
  });

  it('returns a redirect to the caller instead of following it', async () => {
    const policy = outboundPolicy({ allowCidrs: ['127.0.0.0/8'], allowHttp: true });
    const guarded = createGuardedFetch(policy);
    // Even an explicit request to follow is overridden.
    const res = await guarded(`http://127.0.0.1:${port}/redirect`, { redirect: 'follow' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`http://127.0.0.1:${port}/second`);
    await res.arrayBuffer();
    expect(hits).toContain('/redirect');
    expect(hits).not.toContain('/second');
  });
});

describe('outboundPolicy', () => {
  it('validates and freezes the policy', () => {
    const policy = outboundPolicy({ allowCidrs: ['127.0.0.0/8', '::1/128', 'fd00::/8', '10.1.2.3'] });
    expect(policy).toEqual({ allowHosts: [], allowCidrs: ['127.0.0.0/8', '::1/128', 'fd00::/8', '10.1.2.3'], allowHttp: false });
    expect(Object.isFrozen(policy)).toBe(true);
    expect(outboundPolicy({})).toEqual(DEFAULT_OUTBOUND_POLICY);
    // A bare address means exactly that address.
    expect(checkOutboundUrl('https://10.1.2.3/', policy).hostname).toBe('10.1.2.3');
    expect(() => checkOutboundUrl('https://10.1.2.4/', policy)).toThrow(/private/);
    expect(checkOutboundUrl('https://[::1]/', policy).hostname).toBe('[::1]');
  });

  it.each(['10.0.0.0/33', '::1/129', 'localhost/8', '10.0.0/8', '10.0.0.0/', '10.0.0.0/8/1', 'fe80::%eth0/64', ''])('rejects the bad CIDR %j naming it', (cidr) => {
    expect(() => outboundPolicy({ allowCidrs: [cidr] })).toThrow(`'${cidr}'`);
  });

  it('rejects malformed lists', () => {
    expect(() => outboundPolicy({ allowHosts: 'localhost' as unknown as string[] })).toThrow(/allowHosts/);
    expect(() => outboundPolicy({ allowHosts: [''] })).toThrow(/allowHosts/);
    expect(() => outboundPolicy({ allowHttp: 'yes' as unknown as boolean })).toThrow(/allowHttp/);
  });
});

describe('createGuardedFetch: a fetch cut short', () => {
  let server: http.Server;
  let connections = 0;

  beforeAll(async () => {
    // a body that never ends: the reader takes a first chunk and gives up (a size cap, a timeout)
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x'.repeat(1000));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('closes its connection and opens no other (undici 7 connects again for an aborted request: src/util/undici-clients.ts)', async () => {
    const guarded = createGuardedFetch(outboundPolicy({ allowCidrs: ['127.0.0.0/8'], allowHttp: true }), { connectTimeoutMs: 1000 });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const res = await guarded(url, { signal: controller.signal });
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      controller.abort();
      await reader.read().catch(() => undefined);
    }
    const open = () => new Promise<number>((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count))));
    for (let waited = 0; waited < 2_000 && (await open()) > 0; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await open()).toBe(0);
    expect(connections).toBe(3);
  });
});
