import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `count` random base62 characters. Bytes ≥ 248 are skipped so every character is equally likely. */
export function randomBase62(count: number): string {
  let out = '';
  while (out.length < count) {
    for (const byte of randomBytes(count * 2)) {
      if (byte < 248 && out.length < count) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** A Stripe-style id: `pi_`, `ch_`, `re_`, `txn_`, `evt_`, `spt_`, `req_` … followed by 24 base62 characters. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(24)}`;
}
