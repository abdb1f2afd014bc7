/** The reference of one ERC-20 Transfer log: `<txHash>:<logIndex>`, hash lowercase. */
export function chainLogReference(txHash: string, logIndex: number): string {
  return `${txHash.toLowerCase()}:${logIndex}`;
}

/** The asset id of a token on an EVM network: `eip155:8453/0x…`, address lowercase (as @mp/ledger stores it). */
export function chainAsset(network: string, token: string): string {
  return `${network}/${token.toLowerCase()}`;
}

/** The asset id of a Stripe currency: `stripe/usd`. */
export function stripeAsset(currency: string): string {
  return `stripe/${currency.toLowerCase()}`;
}
