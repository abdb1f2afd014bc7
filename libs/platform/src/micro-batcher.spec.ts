import { MicroBatcher } from './micro-batcher';

interface Item {
  key: string;
  value: number;
}

/** A flush that waits until the test lets it finish, recording what it got. */
function gatedFlush(outcome: (item: Item) => PromiseSettledResult<number> = (item) => ({ status: 'fulfilled', value: item.value * 10 })) {
  const flushes: Item[][] = [];
  const gates: (() => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  const flush = async (items: Item[]) => {
    flushes.push(items);
    maxRunning = Math.max(maxRunning, ++running);
    await new Promise<void>((resolve) => gates.push(resolve));
    running--;
    return items.map(outcome);
  };
  const openAll = async () => {
    while (gates.length) {
      gates.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { flush, flushes, openAll, maxRunning: () => maxRunning };
}

describe('MicroBatcher', () => {
  it('puts what arrives while flushes run into the next flush, at most maxRunning at once, each caller getting its own outcome', async () => {
    const gated = gatedFlush();
    const batcher = new MicroBatcher<Item, number>((i) => i.key, gated.flush, { maxRunning: 2, maxBatch: 100 });
    const results = Promise.all(Array.from({ length: 8 }, (_, i) => batcher.submit({ key: `k${i}`, value: i })));
    await new Promise((r) => setImmediate(r));
    // the first two started at once; the six others wait together for the next flush
    expect(gated.flushes.map((f) => f.map((i) => i.value))).toEqual([[0], [1]]);
    await gated.openAll();
    expect(await results).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
    expect(gated.flushes.map((f) => f.map((i) => i.value))).toEqual([[0], [1], [2, 3, 4, 5, 6, 7]]);
    expect(gated.maxRunning()).toBeLessThanOrEqual(2);
  });

  it('never puts two items of one key in one flush, nor in two running flushes', async () => {
    const gated = gatedFlush();
    const batcher = new MicroBatcher<Item, number>((i) => i.key, gated.flush, { maxRunning: 2, maxBatch: 100 });
    const results = Promise.all([
      batcher.submit({ key: 'a', value: 1 }),
      batcher.submit({ key: 'a', value: 2 }),
      batcher.submit({ key: 'b', value: 3 }),
      batcher.submit({ key: 'a', value: 4 }),
    ]);
    await new Promise((r) => setImmediate(r));
    // 'a' runs; the second flush takes 'b' and leaves the other two 'a's waiting
    expect(gated.flushes.map((f) => f.map((i) => i.value))).toEqual([[1], [3]]);
    await gated.openAll();
    expect(await results).toEqual([10, 20, 30, 40]);
    for (const flush of gated.flushes) expect(new Set(flush.map((i) => i.key)).size).toBe(flush.length);
    expect(gated.flushes.flat().map((i) => i.value)).toEqual([1, 3, 2, 4]);
  });

  it('keeps batches within maxBatch', async () => {
    const gated = gatedFlush();
    const batcher = new MicroBatcher<Item, number>((i) => i.key, gated.flush, { maxRunning: 1, maxBatch: 3 });
    const results = Promise.all(Array.from({ length: 8 }, (_, i) => batcher.submit({ key: `k${i}`, value: i })));
    await new Promise((r) => setImmediate(r));
    await gated.openAll();
    await results;
    expect(gated.flushes.map((f) => f.length)).toEqual([1, 3, 3, 1]);
  });

  it('rejects only the items whose outcome is a failure; a flush that throws rejects its own items, and later flushes go on', async () => {
    let first = true;
    const batcher = new MicroBatcher<Item, number>(
      (i) => i.key,
      async (items) => {
        if (first) {
          first = false;
          await new Promise((r) => setImmediate(r));
          throw new Error('database away');
        }
        return items.map((i) => (i.value < 0 ? { status: 'rejected', reason: new Error(`refused ${i.value}`) } : { status: 'fulfilled', value: i.value }));
      },
      { maxRunning: 1, maxBatch: 100 },
    );
    const outcomes = await Promise.allSettled([
      batcher.submit({ key: 'a', value: 1 }),
      batcher.submit({ key: 'b', value: 2 }),
      batcher.submit({ key: 'c', value: -3 }),
    ]);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual(['database away', 2, 'refused -3']);
  });
});
