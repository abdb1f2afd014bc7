import { Injectable } from '@nestjs/common';
import { stripeCurrencyDecimals } from '@mp/money';
import type { AssetInfo } from '@mp/reconciliation';
import { ChainScanner } from './chain/chain-scanner';

/** How long an answer waits for a token's first description from the chain; the lookup goes on and is kept for next time. */
const CHAIN_LOOKUP_WAIT_MS = 2_000;

/**
 * Symbol and decimals of a ledger asset, for showing amounts to people: a Stripe currency (`stripe/usd`) by its minor
 * unit (libs/money), a token (`eip155:8453/0x…`) as its contract answers on the reconciled chain (read once per
 * process). Undefined when not known: a network without an RPC URL, a token that does not answer in time.
 */
@Injectable()
export class AssetDirectory {
  constructor(private readonly chain: ChainScanner) {}

  async describe(asset: string): Promise<AssetInfo | undefined> {
    const currency = /^stripe\/([a-z]{3})$/.exec(asset)?.[1];
    if (currency) return { asset, symbol: currency.toUpperCase(), decimals: stripeCurrencyDecimals(currency) };
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, CHAIN_LOOKUP_WAIT_MS, undefined);
      timer.unref();
    });
    try {
      return await Promise.race([this.chain.tokenInfo(asset), waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  async describeAll(assets: Iterable<string>): Promise<AssetInfo[]> {
    const found = await Promise.all([...new Set(assets)].map((asset) => this.describe(asset)));
    return found.filter((info): info is AssetInfo => info !== undefined);
  }
}
