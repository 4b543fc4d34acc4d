import { isIP } from 'node:net';

/**
 * Classifies IP addresses for the outbound guard (decision 0015). An outbound request may only reach a `public`
 * address unless the operator allowed the host or a CIDR containing the address (`TROUPE_OUTBOUND_ALLOW`).
 *
 * IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address inside them, so `::ffff:127.0.0.1` is loopback.
 */

export type AddressClass =
  | 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved' | 'shared' | 'documentation';

/** A parsed address: 4 bytes for IPv4, 16 for IPv6. */
export interface ParsedAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

export function parseAddress(text: string): ParsedAddress | undefined {
  // A zone id (`fe80::1%eth0`) names an interface, never changes the class of the address itself.
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const unzoned = bare.includes('%') ? bare.slice(0, bare.indexOf('%')) : bare;
  const family = isIP(unzoned);
  if (family === 4) return { family: 4, bytes: Uint8Array.from(unzoned.split('.').map(Number)) };
  if (family === 6) return { family: 6, bytes: parseIpv6(unzoned) };
  return undefined;
}

function parseIpv6(text: string): Uint8Array {
  // isIP has validated the text; this only expands `::` and rewrites a trailing dotted IPv4 part as two groups.
  let normal = text;
  const lastColon = normal.lastIndexOf(':');
  const tail = normal.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    normal = `${normal.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const halves = normal.split('::');
  const left = parse(halves[0] ?? '');
  const right = halves.length > 1 ? parse(halves[1] ?? '') : [];
  const groups = halves.length > 1 ? [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right] : left;
  const bytes = new Uint8Array(16);
  groups.slice(0, 8).forEach((g, i) => { bytes[i * 2] = g >> 8; bytes[i * 2 + 1] = g & 0xff; });
  return bytes;
}

interface Range { readonly prefix: Uint8Array; readonly bits: number; readonly klass: AddressClass }

const v4 = (cidr: string, klass: AddressClass): Range => {
  const [ip = '', bits = '32'] = cidr.split('/');
  return { prefix: parseAddress(ip)!.bytes, bits: Number(bits), klass };
};
const v6 = (cidr: string, klass: AddressClass): Range => {
  const [ip = '', bits = '128'] = cidr.split('/');
  return { prefix: parseAddress(ip)!.bytes, bits: Number(bits), klass };
};

/** IANA special-purpose IPv4 registry, the parts no outbound request should reach by default. */
const ipv4Ranges: readonly Range[] = [
  v4('0.0.0.0/8', 'unspecified'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'shared'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'reserved'),
  v4('192.0.2.0/24', 'documentation'),
  v4('192.88.99.0/24', 'reserved'),
  v4('192.168.0.0/16', 'private'),
  v4('198.18.0.0/15', 'reserved'),
  v4('198.51.100.0/24', 'documentation'),
  v4('203.0.113.0/24', 'documentation'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved'),
];

const ipv6Ranges: readonly Range[] = [
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('100::/64', 'reserved'),
  v6('2001::/23', 'reserved'),
  v6('2001:db8::/32', 'documentation'),
  v6('fc00::/7', 'private'),
  v6('fe80::/10', 'link-local'),
  v6('fec0::/10', 'private'),
  v6('ff00::/8', 'multicast'),
];

export function inPrefix(bytes: Uint8Array, prefix: Uint8Array, bits: number): boolean {
  if (bytes.length !== prefix.length) return false;
  const whole = Math.floor(bits / 8);
  for (let i = 0; i < whole; i++) if (bytes[i] !== prefix[i]) return false;
  const rest = bits % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] ?? 0) & mask) === ((prefix[whole] ?? 0) & mask);
}

/** The IPv4 address an IPv6 address stands for, when it is one of the forms that embed one. */
export function embeddedIpv4(bytes: Uint8Array): Uint8Array | undefined {
  if (bytes.length !== 16) return undefined;
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated but still routed by some stacks).
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  if (zeros(0, 12) && !zeros(12, 16) && !(zeros(12, 15) && bytes[15] === 1)) return bytes.slice(12);
  // 64:ff9b::/96 NAT64 well-known prefix and 64:ff9b:1::/48 local-use NAT64.
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b) {
    if (zeros(4, 12)) return bytes.slice(12);
    if (bytes[4] === 0x00 && bytes[5] === 0x01) return bytes.slice(12);
  }
  // 2002:AABB:CCDD::/48 6to4.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6);
  return undefined;
}

export function classifyAddress(text: string): AddressClass | undefined {
  const parsed = parseAddress(text);
  if (!parsed) return undefined;
  return classifyParsed(parsed);
}

export function classifyParsed(parsed: ParsedAddress): AddressClass {
  if (parsed.family === 6) {
    const inner = embeddedIpv4(parsed.bytes);
    if (inner) return classifyParsed({ family: 4, bytes: inner });
    return ipv6Ranges.find((r) => inPrefix(parsed.bytes, r.prefix, r.bits))?.klass ?? 'public';
  }
  if (parsed.bytes.every((b) => b === 255)) return 'reserved';
  return ipv4Ranges.find((r) => inPrefix(parsed.bytes, r.prefix, r.bits))?.klass ?? 'public';
}

/**
 * The operator's allow list: host names (exact, case-insensitive) and CIDRs or single addresses. An IPv4 CIDR
 * also matches the IPv4-mapped IPv6 form of its addresses.
 */
export class OutboundAllowList {
  private readonly hosts = new Set<string>();
  private readonly cidrs: { prefix: Uint8Array; bits: number }[] = [];

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      if (entry === '') continue;
      const [ip = '', bitsText] = entry.split('/');
      const parsed = parseAddress(ip);
      if (parsed) {
        const max = parsed.family === 4 ? 32 : 128;
        const bits = bitsText === undefined ? max : Number(bitsText);
        if (Number.isInteger(bits) && bits >= 0 && bits <= max) this.cidrs.push({ prefix: parsed.bytes, bits });
        continue;
      }
      this.hosts.add(entry.replace(/\.$/, ''));
    }
  }

  allowsHost(hostname: string): boolean {
    return this.hosts.has(hostname.toLowerCase().replace(/\.$/, ''));
  }

  allowsAddress(address: string): boolean {
    const parsed = parseAddress(address);
    if (!parsed) return false;
    const forms = [parsed.bytes];
    const inner = parsed.family === 6 ? embeddedIpv4(parsed.bytes) : undefined;
    if (inner) forms.push(inner);
    return this.cidrs.some((c) => forms.some((bytes) => inPrefix(bytes, c.prefix, c.bits)));
  }
}
