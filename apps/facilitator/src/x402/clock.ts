import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { ChainClock } from '@mp/chain';

/** Time, injectable so tests can move it. */
@Injectable()
export class Clock {
  nowMs(): number {
    return Date.now();
  }

  nowSeconds(): bigint {
    return BigInt(Math.floor(this.nowMs() / 1000));
  }
}

/** CLOCK_RPC_URL (development only): the chain's time, so a demo or a benchmark moves the facilitator and the chain together. */
class ChainFollowingClock extends Clock implements OnModuleDestroy {
  constructor(private readonly chain: ChainClock) {
    super();
  }

  override nowMs(): number {
    return this.chain.nowMs();
  }

  onModuleDestroy(): void {
    this.chain.stop();
  }
}

export async function clockFor(rpcUrl: string | undefined): Promise<Clock> {
  return rpcUrl ? new ChainFollowingClock(await new ChainClock(rpcUrl).start()) : new Clock();
}
