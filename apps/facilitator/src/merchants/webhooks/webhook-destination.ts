import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';

/**
 * Where webhooks may go. A merchant's webhook URL is sent from inside the operator's network, so a URL that names a
 * loopback, private, link-local, unspecified, multicast or cloud-metadata address would let any merchant make the
 * worker call internal services (SSRF). Such destinations are refused unless the operator sets
 * WEBHOOK_ALLOW_PRIVATE=true (a private deployment, the demo, the tests). The check runs on every address a name
 * resolves to, at send time, and the connection goes to the address that was checked (DNS rebinding).
 * The merchants CLI registers URLs through the operator API, so this is the only copy of the policy.
 */

export const DESTINATION_NOT_ALLOWED = 'webhook_destination_not_allowed';

/** A destination refused by the policy: recorded as a failed attempt, never retried. */
export class WebhookDestinationRefused extends Error {
  override readonly name = 'WebhookDestinationRefused';
  readonly code = DESTINATION_NOT_ALLOWED;
}

type V4Range = [base: string, prefix: number, kind: string];
type V6Range = [base: string, prefix: number, kind: string];

// Order matters: the first match names the kind (metadata before the link-local or CGNAT range it sits in).
const V4_RANGES: V4Range[] = [
  ['169.254.169.254', 32, 'a cloud metadata address'],
  ['168.63.129.16', 32, 'a cloud metadata address'],
  ['100.100.100.200', 32, 'a cloud metadata address'],
  ['192.0.0.192', 32, 'a cloud metadata address'],
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a reserved address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a reserved address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const V6_RANGES: V6Range[] = [
  ['fd00:ec2::254', 128, 'a cloud metadata address'],
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['100::', 64, 'a reserved address'],
  ['fc00::', 7, 'a private (unique local) address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a private (site-local) address'],
  ['ff00::', 8, 'a multicast address'],
];

/** IPv6 prefixes that carry an IPv4 address in their low 32 bits (mapped, compatible, NAT64): judged by that address. */
const V6_EMBEDDING_V4: [base: string, prefix: number][] = [
  ['::ffff:0:0', 96],
  ['::', 96],
  ['64:ff9b::', 96],
];

/** Names that only ever point inside the operator's network or at a cloud's instance metadata. */
const FORBIDDEN_NAMES = new Set([
  'localhost',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);

/** Why webhooks may not go to this IP address (e.g. "a loopback address"), or undefined for a public one. */
export function forbiddenAddress(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) {
    const value = v4(bare);
    return V4_RANGES.find(([base, prefix]) => inPrefix(value, v4(base), prefix, 32))?.[2];
  }
  if (family === 6) {
    const value = v6(bare);
    const own = V6_RANGES.find(([base, prefix]) => inPrefix(value, v6(base), prefix, 128))?.[2];
    if (own) return own;
    if (V6_EMBEDDING_V4.some(([base, prefix]) => inPrefix(value, v6(base), prefix, 128))) return forbiddenAddress(v4Text(value & 0xffffffffn));
    // 6to4 (2002::/16) carries the IPv4 address in bits 16..48
    if (inPrefix(value, v6('2002::'), 16, 128)) return forbiddenAddress(v4Text((value >> 80n) & 0xffffffffn));
    return undefined;
  }
  return 'not an IP address';
}

/** Why webhooks may not go to this host name by its name alone (before resolving it), or undefined. */
export function forbiddenName(hostname: string): string | undefined {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return 'a loopback name';
  if (FORBIDDEN_NAMES.has(name)) return 'a cloud metadata name';
  return undefined;
}

/**
 * The registration check of a webhook URL: an http(s) URL whose host is not a forbidden name or address. Names are
 * not resolved here (they may not resolve yet); every send checks the resolved addresses again.
 */
export function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
): { ok: true; url: string } | { ok: false; code: 'webhook_url_invalid' | typeof DESTINATION_NOT_ALLOWED; reason: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, code: 'webhook_url_invalid', reason: 'the webhook URL is not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { ok: false, code: 'webhook_url_invalid', reason: 'the webhook URL must be http:// or https://' };
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const why = isIP(host) ? forbiddenAddress(host) : forbiddenName(host);
    if (why)
      return {
        ok: false,
        code: DESTINATION_NOT_ALLOWED,
        reason: `${host} is ${why}; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)`,
      };
  }
  return { ok: true, url: url.toString() };
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request that resolves the name, refuses it when any of its addresses is forbidden, and
 * otherwise hands the checked addresses to the socket, so the connection goes where the check looked.
 */
export function checkedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    for (const { address } of addresses) {
      const why = forbiddenAddress(address);
      if (why) return callback(new WebhookDestinationRefused(`${DESTINATION_NOT_ALLOWED}: ${hostname} resolves to ${address}, ${why}`), []);
    }
    if (!addresses.length) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
    if (options.all) return callback(null, addresses);
    return callback(null, addresses[0].address, addresses[0].family);
  });
}

/** The send-time check of an IP literal host (sockets do not call `lookup` for those). */
export function refuseForbiddenLiteral(url: URL): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return;
  const why = forbiddenAddress(host);
  if (why) throw new WebhookDestinationRefused(`${DESTINATION_NOT_ALLOWED}: ${host} is ${why}`);
}

function inPrefix(value: bigint, base: bigint, prefix: number, bits: number): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

function v4(text: string): bigint {
  return text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function v4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
}

function v6(text: string): bigint {
  let body = text.toLowerCase();
  // a dotted IPv4 tail (::ffff:127.0.0.1) is two hextets
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (dotted) {
    const n = v4(dotted[1]);
    body = `${body.slice(0, dotted.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = body.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const fill = body.includes('::') ? 8 - left.length - right.length : 0;
  const parts = [...left, ...Array<string>(fill).fill('0'), ...right];
  return parts.reduce((n, part) => (n << 16n) | BigInt(parseInt(part, 16)), 0n);
}
