import type { EntrySource } from '../model';

/** Where a report's references can be looked at. Without an entry, no link. */
export interface ReferenceLinkOptions {
  /** A block explorer's base URL per CAIP-2 network, e.g. `{ 'eip155:8453': 'https://basescan.org' }` */
  explorers?: Readonly<Record<string, string>>;
  /** The Stripe account's mode (from its key): links go to its dashboard, under `/test` in test mode. */
  stripeMode?: 'test' | 'live';
}

const TX_HASH = /^(0x[0-9a-fA-F]{64})(?::\d+)?$/;
const STRIPE_ID = /^(pi|ch|re|txn)_[A-Za-z0-9]{1,200}$/;
/** Dashboard pages per id prefix; a balance transaction has no page of its own, the dashboard's search finds it. */
const STRIPE_PAGES: Record<string, (id: string) => string> = {
  pi: (id) => `payments/${id}`,
  ch: (id) => `payments/${id}`,
  re: (id) => `refunds/${id}`,
  txn: (id) => `search?query=${id}`,
};

/**
 * The page a reference is shown on: `<explorer>/tx/<hash>` for a chain reference (`<txHash>` or `<txHash>:<logIndex>`)
 * on a network with an explorer, the Stripe dashboard for `pi_…`, `ch_…`, `re_…` and `txn_…`; undefined otherwise
 * (an MPP challenge id, a ledger id, a network without an explorer).
 */
export function referenceUrl(source: EntrySource, asset: string, reference: string, options: ReferenceLinkOptions): string | undefined {
  if (source === 'chain') {
    const hash = TX_HASH.exec(reference)?.[1];
    const explorer = options.explorers?.[asset.slice(0, asset.indexOf('/'))];
    return hash && explorer ? `${explorer.replace(/\/+$/, '')}/tx/${hash.toLowerCase()}` : undefined;
  }
  const match = STRIPE_ID.exec(reference);
  if (!match || !options.stripeMode) return undefined;
  return `https://dashboard.stripe.com/${options.stripeMode === 'test' ? 'test/' : ''}${STRIPE_PAGES[match[1]](reference)}`;
}
