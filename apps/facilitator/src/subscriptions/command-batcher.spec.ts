import { describe, expect, it } from 'vitest';
import { CommandBatcher } from './command-batcher';

describe('CommandBatcher', () => {
  it('runs the items that arrive together as one batch, and answers each caller with its own result or error', async () => {
    const batches: number[][] = [];
    const batcher = new CommandBatcher<number, string>(
      async (items) => {
        batches.push(items);
        return items.map((n) => (n < 0 ? new Error(`negative ${n}`) : `ok ${n}`));
      },
      { max: 10, windowMs: 5 },
    );
    const answers = await Promise.allSettled([batcher.add(1), batcher.add(-2), batcher.add(3)]);
    expect(batches).toEqual([[1, -2, 3]]);
    expect(answers).toEqual([
      { status: 'fulfilled', value: 'ok 1' },
      { status: 'rejected', reason: new Error('negative -2') },
      { status: 'fulfilled', value: 'ok 3' },
    ]);
  });

  it('runs a full batch at once, without waiting for the window, and starts the next', async () => {
    const batches: number[][] = [];
    const batcher = new CommandBatcher<number, number>(
      async (items) => {
        batches.push(items);
        return items;
      },
      { max: 2, windowMs: 60_000 },
    );
    const first = Promise.all([batcher.add(1), batcher.add(2)]);
    expect(await first).toEqual([1, 2]);
    const next = batcher.add(3);
    await expect(Promise.race([next, new Promise((resolve) => setTimeout(() => resolve('waiting'), 50))])).resolves.toBe('waiting');
    expect(batches).toEqual([[1, 2]]);
  });

  it('fails every caller of a batch that throws, and one the batch gives no answer for', async () => {
    const throwing = new CommandBatcher<number, number>(
      async () => {
        throw new Error('database away');
      },
      { max: 5, windowMs: 1 },
    );
    await expect(Promise.all([throwing.add(1), throwing.add(2)])).rejects.toThrow('database away');
    const short = new CommandBatcher<number, number>(async (items) => items.slice(0, 1), { max: 5, windowMs: 1 });
    expect(await Promise.allSettled([short.add(1), short.add(2)])).toEqual([
      { status: 'fulfilled', value: 1 },
      { status: 'rejected', reason: new Error('the batch gave no answer for this item') },
    ]);
  });
});
