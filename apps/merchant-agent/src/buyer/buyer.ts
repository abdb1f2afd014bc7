import { x402Client } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { decodeHeader, X402Header } from '@mp/x402';

export interface BuyerOptions {
  url: string;
  privateKey: Hex;
  network: `${string}:${string}`;
  /** The token the buyer agrees to pay in, and the most it pays per request (atomic units). */
  asset: string;
  maxAmountPerPayment: string;
  log?: (line: string) => void;
}

export interface Purchase {
  status: number;
  body: unknown;
  payer: string;
  transaction?: string;
  network?: string;
  price?: { amount: string; asset: string; payTo: string };
}

/**
 * A buyer agent using the official x402 client: ask, get a 402 with requirements, sign an EIP-3009
 * authorization, retry with PAYMENT-SIGNATURE, read the settlement from PAYMENT-RESPONSE.
 */
export async function buy(options: BuyerOptions): Promise<Purchase> {
  const log = options.log ?? (() => undefined);
  const account = privateKeyToAccount(options.privateKey);
  const client = new x402Client()
    .register(options.network, new ExactEvmScheme(toClientEvmSigner(account)))
    .setSpendControls({ allowedAssets: [{ network: options.network, asset: options.asset, maxAmountPerPayment: options.maxAmountPerPayment }] });

  let price: Purchase['price'];
  const observedFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const required = response.headers.get(X402Header.paymentRequired);
    if (response.status === 402 && required) {
      const accepts = (decodeHeader(required) as { accepts: { amount: string; asset: string; payTo: string; network: string }[] }).accepts;
      price = { amount: accepts[0].amount, asset: accepts[0].asset, payTo: accepts[0].payTo };
      log(`402 Payment Required: ${accepts[0].amount} atomic units of ${accepts[0].asset} to ${accepts[0].payTo} on ${accepts[0].network}`);
      log(`signing an EIP-3009 authorization as ${account.address} and retrying`);
    }
    return response;
  };

  const response = await wrapFetchWithPayment(observedFetch, client)(options.url);
  const body = await response.json().catch(() => undefined);
  const header = response.headers.get(X402Header.paymentResponse);
  const settlement = header ? decodePaymentResponseHeader(header) : undefined;
  log(`${response.status} ${response.statusText}${settlement ? `: settled in ${settlement.transaction} on ${settlement.network}` : ''}`);
  return { status: response.status, body, payer: account.address, transaction: settlement?.transaction, network: settlement?.network, price };
}
