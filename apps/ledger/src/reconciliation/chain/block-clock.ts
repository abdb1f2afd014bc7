import type { PublicClient } from 'viem';

/** Enough for several binary searches and every block with a log of a busy period. */
const CACHE_LIMIT = 50_000;

/** Block timestamps of one network, remembered: blocks never change their time (below reorg depth). */
export class BlockClock {
  private readonly seconds = new Map<bigint, number>();

  constructor(private readonly client: Pick<PublicClient, 'getBlock'>) {}

  async timestampOf(blockNumber: bigint): Promise<number> {
    const known = this.seconds.get(blockNumber);
    if (known !== undefined) return known;
    const block = await this.client.getBlock({ blockNumber });
    this.remember(blockNumber, Number(block.timestamp));
    return Number(block.timestamp);
  }

  /** For logs that carry their block's time (eth_getLogs of newer nodes): saves a getBlock each. */
  remember(blockNumber: bigint, timestampSeconds: number): void {
    if (this.seconds.size >= CACHE_LIMIT) this.seconds.delete(this.seconds.keys().next().value!);
    this.seconds.set(blockNumber, timestampSeconds);
  }

  /**
   * The first block whose timestamp is at or after `at`, searching blocks 0..latest; latest + 1 when none is (the
   * block that will be). Binary search: timestamps never decrease along the chain.
   */
  async firstBlockAtOrAfter(at: Date, latest: bigint): Promise<bigint> {
    const target = Math.ceil(at.getTime() / 1000);
    let low = 0n;
    let high = latest + 1n;
    while (low < high) {
      const middle = (low + high) / 2n;
      if ((await this.timestampOf(middle)) >= target) high = middle;
      else low = middle + 1n;
    }
    return low;
  }
}
