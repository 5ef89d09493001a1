import { BlockList, isIP } from 'node:net';

/**
 * Address ranges an outbound request on a client's behalf must not reach by default: anything
 * that lands on the gateway host itself, its private network, or well-known metadata services.
 * Public addresses are everything else.
 */

type Family = 'ipv4' | 'ipv6';

interface RangeGroup {
  readonly reason: string;
  readonly list: BlockList;
}

// Order matters: the first matching group names the reason, so the narrow, more alarming
// ranges (metadata, broadcast) come before the wide ones that contain them.
const IPV4_RANGES: ReadonlyArray<readonly [reason: string, cidrs: readonly string[]]> = [
  ['a cloud metadata address', ['169.254.169.254/32']],
  ['the broadcast address', ['255.255.255.255/32']],
  ['a loopback address', ['127.0.0.0/8']],
  ['an unspecified ("this network") address', ['0.0.0.0/8']],
  ['a private address', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']],
  ['a link-local address', ['169.254.0.0/16']],
  ['a shared (CGNAT) address', ['100.64.0.0/10']],
  ['a special-purpose (IETF protocol) address', ['192.0.0.0/24']],
  ['a documentation (test) address', ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24']],
  ['a benchmarking address', ['198.18.0.0/15']],
  ['a multicast address', ['224.0.0.0/4']],
  ['a reserved address', ['240.0.0.0/4']],
];

const IPV6_RANGES: ReadonlyArray<readonly [reason: string, cidrs: readonly string[]]> = [
  ['a cloud metadata address', ['fd00:ec2::254/128']],
  ['an unspecified address', ['::/128']],
  ['a loopback address', ['::1/128']],
  ['a unique local (private) address', ['fc00::/7']],
  ['a link-local address', ['fe80::/10']],
  ['a site-local address', ['fec0::/10']],
  ['a multicast address', ['ff00::/8']],
  ['a discard-only address', ['100::/64']],
  ['a documentation (test) address', ['2001:db8::/32']],
];

function rangeGroups(family: Family, table: typeof IPV4_RANGES): readonly RangeGroup[] {
  return table.map(([reason, cidrs]) => {
    const list = new BlockList();
    for (const cidr of cidrs) {
      const [network, prefix] = cidr.split('/');
      list.addSubnet(network!, Number(prefix), family);
    }
    return { reason, list };
  });
}

// Kept per family on purpose: Node's BlockList matches IPv4-mapped IPv6 addresses against IPv4
// rules, which would hide the "embedded in ..." detail that makes the reason understandable.
const IPV4_GROUPS = rangeGroups('ipv4', IPV4_RANGES);
const IPV6_GROUPS = rangeGroups('ipv6', IPV6_RANGES);

function firstMatch(groups: readonly RangeGroup[], address: string, family: Family): string | null {
  for (const group of groups) if (group.list.check(address, family)) return group.reason;
  return null;
}

/** The address without URL brackets (`[::1]`) or an IPv6 zone id (`fe80::1%eth0`). */
export function bareAddress(ip: string): string {
  const unbracketed = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = unbracketed.indexOf('%');
  return zone === -1 ? unbracketed : unbracketed.slice(0, zone);
}

/** The eight 16-bit groups of a valid IPv6 address (a dotted IPv4 tail becomes the last two). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const tailStart = text.lastIndexOf(':') + 1;
  const tail = text.slice(tailStart);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, tailStart)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const left = parse(head);
  const right = parse(rest);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

const dotted = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
const allZero = (groups: number[], from: number, to: number) => groups.slice(from, to).every((group) => group === 0);

/**
 * The IPv4 address an IPv6 address carries, for the forms where that IPv4 address is what is
 * effectively reached (by the local stack, a NAT64 gateway or a 6to4 relay).
 */
function embeddedIPv4(address: string): { ipv4: string; form: string } | null {
  const g = ipv6Groups(address);
  if (allZero(g, 0, 5) && g[5] === 0xffff) return { ipv4: dotted(g[6]!, g[7]!), form: 'an IPv4-mapped IPv6 address' };
  if (allZero(g, 0, 4) && g[4] === 0xffff && g[5] === 0) return { ipv4: dotted(g[6]!, g[7]!), form: 'an IPv4-translated IPv6 address' };
  if (allZero(g, 0, 6)) return { ipv4: dotted(g[6]!, g[7]!), form: 'an IPv4-compatible IPv6 address' };
  if (g[0] === 0x64 && g[1] === 0xff9b && allZero(g, 2, 6)) return { ipv4: dotted(g[6]!, g[7]!), form: 'a NAT64 (64:ff9b::/96) address' };
  if (g[0] === 0x2002) return { ipv4: dotted(g[1]!, g[2]!), form: 'a 6to4 (2002::/16) address' };
  return null;
}

function ipv6Reason(address: string): string | null {
  // The IPv6 table first: `::` and `::1` are technically IPv4-compatible forms too, but
  // "0.0.0.1 embedded in ..." would be a confusing way to say "loopback".
  const direct = firstMatch(IPV6_GROUPS, address, 'ipv6');
  if (direct) return direct;
  const embedded = embeddedIPv4(address);
  if (!embedded) return null;
  const reason = firstMatch(IPV4_GROUPS, embedded.ipv4, 'ipv4');
  return reason && `${reason} (${embedded.ipv4} embedded in ${embedded.form})`;
}

/**
 * Why an address is blocked (e.g. "a loopback address"), or null when it is public. Accepts
 * bracketed IPv6 and zone ids. Anything that is not an IP address is blocked (fail closed).
 */
export function blockedReason(ip: string): string | null {
  const address = bareAddress(ip);
  switch (isIP(address)) {
    case 4:
      return firstMatch(IPV4_GROUPS, address, 'ipv4');
    case 6:
      return ipv6Reason(address);
    default:
      return 'not a valid IP address';
  }
}
