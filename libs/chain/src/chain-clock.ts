import { createPublicClient, http, type PublicClient } from 'viem';

/**
 * The time a development chain keeps (anvil after `evm_increaseTime` and a mined block), so a demo or a benchmark
 * walks through subscription periods without waiting for them. Development only: a real chain's latest block lags
 * the wall clock, and services must not take their time from a node.
 *
 * The clock is the wall clock plus the largest offset a block has shown; it never runs backwards.
 */
export class ChainClock {
  private offsetMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly client: PublicClient;

  constructor(
    rpcUrl: string,
    private readonly refreshMs = 250,
  ) {
    this.client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: 5_000 }) });
  }

  nowMs(): number {
    return Date.now() + this.offsetMs;
  }

  /** Reads the latest block once, then keeps following the chain in the background. */
  async start(): Promise<this> {
    await this.refresh();
    this.timer ??= setInterval(() => this.refresh().catch(() => undefined), this.refreshMs).unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async refresh(): Promise<void> {
    const block = await this.client.getBlock({ blockTag: 'latest' });
    this.offsetMs = Math.max(this.offsetMs, Number(block.timestamp) * 1000 - Date.now());
  }
}
