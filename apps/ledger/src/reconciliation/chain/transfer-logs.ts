import { parseAbiItem, type Address, type Log, type PublicClient } from 'viem';

export const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
export type TransferLog = Log<bigint, number, false, typeof TRANSFER_EVENT, true>;

/** What nodes and providers answer when one eth_getLogs asks for too much (too many blocks or results). */
const TOO_MUCH = /range|too many|too large|limit|exceed|more than \d+|response size/i;

export interface TransferLogQuery {
  tokens: Address[];
  /** the recipients: any of these (or anyone, when only `from` is given) */
  to?: Address[];
  /** the senders: any of these (refund wallets) */
  from?: Address[];
  fromBlock: bigint;
  toBlock: bigint;
  /** most blocks per request; halved while the node refuses, grown back after successes */
  maxRange: number;
  /** after each range: how many blocks of this query are done */
  onBlocks?(scanned: bigint): void;
}

/**
 * Transfer logs of `tokens` to `to` (or from `from`) in [fromBlock, toBlock], one page per block range as the node answers it: the
 * caller takes each page before the next is asked for, so no more than one range's logs are held here at a time.
 */
export async function* transferLogPages(client: Pick<PublicClient, 'getLogs'>, query: TransferLogQuery): AsyncGenerator<TransferLog[]> {
  const max = BigInt(query.maxRange);
  let range = max;
  for (let start = query.fromBlock; start <= query.toBlock;) {
    const end = start + range - 1n < query.toBlock ? start + range - 1n : query.toBlock;
    let page: TransferLog[];
    try {
      page = await client.getLogs({
        address: query.tokens,
        event: TRANSFER_EVENT,
        args: { ...(query.from && { from: query.from }), ...(query.to && { to: query.to }) },
        fromBlock: start,
        toBlock: end,
        strict: true,
      });
    } catch (error) {
      if (range === 1n || !isTooMuch(error)) throw error;
      range /= 2n;
      continue;
    }
    yield page;
    query.onBlocks?.(end - query.fromBlock + 1n);
    start = end + 1n;
    if (range < max) range = range * 2n > max ? max : range * 2n;
  }
}

function isTooMuch(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const details = [(e as { details?: unknown }).details, (e as { message?: unknown }).message].filter((m) => typeof m === 'string').join(' ');
    if (TOO_MUCH.test(details) || (e as { code?: unknown }).code === -32005) return true;
  }
  return false;
}
