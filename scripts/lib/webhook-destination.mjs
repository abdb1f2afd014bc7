// Which webhook URLs the merchants CLI accepts: the registration half of the facilitator's webhook destination policy
// (apps/facilitator/src/merchants/webhooks/webhook-destination.ts, which also checks every resolved address at send
// time). The same tables; webhook-destination.spec.ts checks that both give the same answers.
import { isIP } from 'node:net';

export const DESTINATION_NOT_ALLOWED = 'webhook_destination_not_allowed';

// Order matters: the first match names the kind (metadata before the link-local or CGNAT range it sits in).
const V4_RANGES = [
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
const V6_RANGES = [
  ['fd00:ec2::254', 128, 'a cloud metadata address'],
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['100::', 64, 'a reserved address'],
  ['fc00::', 7, 'a private (unique local) address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a private (site-local) address'],
  ['ff00::', 8, 'a multicast address'],
];
// IPv6 prefixes carrying an IPv4 address in their low 32 bits (mapped, compatible, NAT64): judged by that address.
const V6_EMBEDDING_V4 = [
  ['::ffff:0:0', 96],
  ['::', 96],
  ['64:ff9b::', 96],
];
const FORBIDDEN_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal', 'metadata.tencentyun.com']);

/** Why webhooks may not go to this IP address (e.g. "a loopback address"), or undefined for a public one. */
export function forbiddenAddress(address) {
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
    if (inPrefix(value, v6('2002::'), 16, 128)) return forbiddenAddress(v4Text((value >> 80n) & 0xffffffffn));
    return undefined;
  }
  return 'not an IP address';
}

/** Why webhooks may not go to this host name by its name alone, or undefined. */
export function forbiddenName(hostname) {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return 'a loopback name';
  if (FORBIDDEN_NAMES.has(name)) return 'a cloud metadata name';
  return undefined;
}

/**
 * An http(s) URL whose host is not a forbidden name or address (names are not resolved: the facilitator checks every
 * resolved address when it sends). `{ ok: true, url }` or `{ ok: false, code, reason }`.
 */
export function checkWebhookUrl(raw, allowPrivate) {
  let url;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, code: 'webhook_url_invalid', reason: 'the webhook URL is not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, code: 'webhook_url_invalid', reason: 'the webhook URL must be http:// or https://' };
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const why = isIP(host) ? forbiddenAddress(host) : forbiddenName(host);
    if (why) return { ok: false, code: DESTINATION_NOT_ALLOWED, reason: `${host} is ${why}; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)` };
  }
  return { ok: true, url: url.toString() };
}

/** WEBHOOK_ALLOW_PRIVATE as the facilitator reads it (true/1/yes). */
export function allowPrivateFromEnv(env = process.env) {
  return ['true', '1', 'yes'].includes(env.WEBHOOK_ALLOW_PRIVATE ?? 'false');
}

function inPrefix(value, base, prefix, bits) {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

function v4(text) {
  return text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function v4Text(value) {
  return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
}

function v6(text) {
  let body = text.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (dotted) {
    const n = v4(dotted[1]);
    body = `${body.slice(0, dotted.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = body.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const fill = body.includes('::') ? 8 - left.length - right.length : 0;
  const parts = [...left, ...Array(fill).fill('0'), ...right];
  return parts.reduce((n, part) => (n << 16n) | BigInt(parseInt(part, 16)), 0n);
}
