import { BlockClock } from './block-clock';

/** A chain with several blocks per second at times, as anvil mines them. */
function chain(timestamps: number[]) {
  const calls: bigint[] = [];
  const client = {
    getBlock: async ({ blockNumber }: { blockNumber: bigint }) => {
      calls.push(blockNumber);
      return { timestamp: BigInt(timestamps[Number(blockNumber)]) };
    },
  };
  return { clock: new BlockClock(client as never), calls };
}

describe('BlockClock', () => {
  const timestamps = [100, 100, 105, 110, 110, 110, 120, 130];
  const latest = BigInt(timestamps.length - 1);

  it('finds the first block at or after a time by binary search', async () => {
    const { clock } = chain(timestamps);
    const at = (s: number) => clock.firstBlockAtOrAfter(new Date(s * 1000), latest);
    expect(await at(0)).toBe(0n);
    expect(await at(100)).toBe(0n);
    expect(await at(101)).toBe(2n);
    expect(await at(110)).toBe(3n);
    expect(await at(110.5)).toBe(6n);
    expect(await at(130)).toBe(7n);
    expect(await at(131)).toBe(8n); // none yet: the next block
  });

  it('asks the node for each block once', async () => {
    const { clock, calls } = chain(timestamps);
    await clock.firstBlockAtOrAfter(new Date(110_000), latest);
    await clock.firstBlockAtOrAfter(new Date(110_000), latest);
    expect(new Set(calls).size).toBe(calls.length);
  });
});
