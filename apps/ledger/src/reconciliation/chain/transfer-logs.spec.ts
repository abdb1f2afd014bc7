import { transferLogPages, type TransferLogQuery } from './transfer-logs';

/** Every page, and what the node had been asked when each page was handed over. */
async function collect(client: never, query: TransferLogQuery, ranges?: [bigint, bigint][]) {
  const pages: { logs: unknown[]; askedSoFar: number }[] = [];
  for await (const page of transferLogPages(client, query)) pages.push({ logs: page, askedSoFar: ranges?.length ?? 0 });
  return { logs: pages.flatMap((p) => p.logs), pages };
}
const transferLogs = async (client: never, query: TransferLogQuery) => (await collect(client, query)).logs;

const TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const MERCHANT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** A node that refuses ranges wider than `limit` blocks, as hosted RPCs do, and has one log every 10 blocks. */
function node(limit: number, message = 'query exceeds max block range 100') {
  const ranges: [bigint, bigint][] = [];
  const client = {
    getLogs: async ({ fromBlock, toBlock }: { fromBlock: bigint; toBlock: bigint }) => {
      ranges.push([fromBlock, toBlock]);
      if (toBlock - fromBlock + 1n > BigInt(limit)) throw Object.assign(new Error('RPC Request failed.'), { cause: { code: -32602, message } });
      const logs = [];
      for (let b = fromBlock; b <= toBlock; b++) if (b % 10n === 0n) logs.push({ blockNumber: b, logIndex: 0 });
      return logs;
    },
  };
  return { client: client as never, ranges };
}

describe('transferLogs', () => {
  it('reads the whole range in chunks of at most maxRange blocks, reporting progress', async () => {
    const { client, ranges } = node(10_000);
    const seen: bigint[] = [];
    const logs = await transferLogs(client, {
      tokens: [TOKEN],
      to: [MERCHANT],
      fromBlock: 1n,
      toBlock: 2_500n,
      maxRange: 1_000,
      onBlocks: (n) => seen.push(n),
    });
    expect(ranges).toEqual([
      [1n, 1_000n],
      [1_001n, 2_000n],
      [2_001n, 2_500n],
    ]);
    expect(seen).toEqual([1_000n, 2_000n, 2_500n]);
    expect(logs).toHaveLength(250);
  });

  it('hands over each range as its own page before asking the node for the next one', async () => {
    const { client, ranges } = node(10_000);
    const { pages } = await collect(client, { tokens: [TOKEN], to: [MERCHANT], fromBlock: 1n, toBlock: 2_500n, maxRange: 1_000 }, ranges);
    expect(pages.map((p) => p.logs.length)).toEqual([100, 100, 50]);
    // a page is taken while the node has answered only the ranges up to it: the scan never reads ahead
    expect(pages.map((p) => p.askedSoFar)).toEqual([1, 2, 3]);
  });

  it('halves the range while the node refuses it, then grows it back', async () => {
    const { client, ranges } = node(100);
    const logs = await transferLogs(client, { tokens: [TOKEN], to: [MERCHANT], fromBlock: 0n, toBlock: 999n, maxRange: 400 });
    expect(logs).toHaveLength(100);
    expect(ranges.slice(0, 4)).toEqual([
      [0n, 399n],
      [0n, 199n],
      [0n, 99n],
      [100n, 299n],
    ]);
    const served = ranges.filter(([a, b]) => b - a + 1n <= 100n);
    expect(served.reduce((n, [a, b]) => n + (b - a + 1n), 0n)).toBe(1_000n);
  });

  it('gives up on other errors, and on a single block the node still refuses', async () => {
    const down = { getLogs: async () => Promise.reject(new Error('fetch failed: ECONNREFUSED')) };
    await expect(transferLogs(down as never, { tokens: [TOKEN], to: [MERCHANT], fromBlock: 0n, toBlock: 10n, maxRange: 4 })).rejects.toThrow('ECONNREFUSED');
    const { client } = node(0, 'Log response size exceeded');
    await expect(transferLogs(client, { tokens: [TOKEN], to: [MERCHANT], fromBlock: 0n, toBlock: 10n, maxRange: 4 })).rejects.toThrow('RPC Request failed.');
  });
});
