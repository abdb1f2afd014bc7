import { Receipt } from 'mppx';
import { Mppx, evm, stripe } from 'mppx/client';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

export interface MppPurchaseOptions {
  url: string;
  /** what to POST (JSON) */
  body: unknown;
  method: 'evm' | 'stripe';
  /** evm: the payer's key and the token's EIP-712 domain */
  evm?: { privateKey: Hex; name: string; version: string };
  /**
   * stripe: the buyer platform's Stripe API (the fake in the demo), a key that may mint Shared Payment Tokens, and
   * the test payment method they draw on.
   */
  stripe?: { apiBase: string; secretKey: string; paymentMethod: string };
  log?: (line: string) => void;
}

export interface MppPurchase {
  status: number;
  body: unknown;
  receipt?: { method: string; reference: string; challengeId?: string; timestamp: string };
}

/** Buys a resource behind MPP with the official mppx client: it answers the 402's challenge of the chosen method. */
export async function buyWithMpp(options: MppPurchaseOptions): Promise<MppPurchase> {
  const log = options.log ?? (() => undefined);
  const method = options.method === 'evm' ? evmMethod(options) : stripeMethod(options);
  const mppx = Mppx.create({ methods: [method], polyfill: false });
  log(`POST ${options.url} paying with MPP method ${options.method}`);
  const response = await mppx.fetch(options.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(options.body) });
  const text = await response.text();
  const header = response.headers.get('payment-receipt');
  const receipt = header ? (Receipt.deserialize(header) as MppPurchase['receipt']) : undefined;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body, ...(receipt && { receipt }) };
}

function evmMethod({ evm: config }: MppPurchaseOptions) {
  if (!config) throw new Error('the evm method needs evm.privateKey, evm.name and evm.version');
  return evm.charge({ account: privateKeyToAccount(config.privateKey), authorization: { name: config.name, version: config.version } });
}

function stripeMethod({ stripe: config }: MppPurchaseOptions) {
  if (!config) throw new Error('the stripe method needs stripe.apiBase, stripe.secretKey and stripe.paymentMethod');
  return stripe.charge({
    paymentMethod: config.paymentMethod,
    // A buyer's own server mints the token: limited to this challenge's amount, currency, seller and expiry.
    createToken: async ({ amount, currency, expiresAt, networkId, paymentMethod }) => {
      const form = new URLSearchParams({
        payment_method: paymentMethod ?? config.paymentMethod,
        'usage_limits[currency]': currency,
        'usage_limits[max_amount]': amount,
        'usage_limits[expires_at]': String(expiresAt),
        'seller_details[network_id]': networkId ?? '',
      });
      const response = await fetch(new URL('/v1/test_helpers/shared_payment/granted_tokens', config.apiBase), {
        method: 'POST',
        headers: { authorization: `Bearer ${config.secretKey}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      const token = (await response.json()) as { id?: string; error?: { message?: string } };
      if (!response.ok || !token.id) throw new Error(`Stripe refused the Shared Payment Token: ${token.error?.message ?? response.status}`);
      return token.id;
    },
  });
}
