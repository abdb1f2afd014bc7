import { channelBreaks, channelKey, prepaidBreaks, type BookedChannelState, type ChainChannelState } from './balances';
import { toCsv } from './csv';
import { reportFromJson, reportToJson } from './json';
import { reconcile } from './reconcile';

const AT = new Date('2026-12-02T12:00:00Z');
const NETWORK = 'eip155:31337';
const ESCROW = '0x00000000000000000000000000000000000000e5';
const TOKEN = '0x00000000000000000000000000000000000000c0';
const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

const booked = (n: number, fields: Partial<BookedChannelState> = {}): BookedChannelState => ({
  channelId: id(n),
  network: NETWORK,
  escrow: ESCROW,
  asset: `${NETWORK}/${TOKEN}`,
  payer: '0xpayer',
  payee: '0xpayee',
  state: 'open',
  deposit: 1000n,
  settled: 300n,
  refunded: 0n,
  ...fields,
});
const onChain = (n: number, fields: Partial<ChainChannelState> = {}): ChainChannelState => ({
  channelId: id(n),
  network: NETWORK,
  escrow: ESCROW,
  exists: true,
  finalized: false,
  deposit: 1000n,
  settled: 300n,
  payer: '0xpayer',
  payee: '0xpayee',
  token: TOKEN,
  block: 42n,
  ...fields,
});
const chainOf = (...states: ChainChannelState[]) => new Map(states.map((s) => [channelKey(s.network, s.escrow, s.channelId), s]));
const kinds = (rows: { kind: string; reference: string }[]) => rows.map((r) => [r.kind, r.reference]);

describe('balance checks', () => {
  it('matches an x402 batch channel against the contract: balance, claimed, and settled within what the receiver was paid', () => {
    // books: deposited 1000, refunded 200, claimed 500, settled 300; the contract: balance 800, claimed 500, and the
    // receiver owed 200 (so this channel is settled between 300 and 500)
    const batchBooks = (n: number, fields: Partial<BookedChannelState> = {}) =>
      booked(n, { scheme: 'x402-batch', deposit: 1000n, refunded: 200n, accepted: 500n, settled: 300n, ...fields });
    const batchChain = (n: number, batch: Partial<NonNullable<ChainChannelState['batch']>> = {}) =>
      onChain(n, { deposit: 800n, settled: 0n, batch: { balance: 800n, totalClaimed: 500n, receiverClaimed: 900n, receiverSettled: 700n, ...batch } });
    expect(channelBreaks({ books: [batchBooks(1)], chain: chainOf(batchChain(1)), opened: [], at: AT })).toEqual([]);
    const rows = channelBreaks({
      books: [batchBooks(1), batchBooks(2), batchBooks(3), batchBooks(4)],
      chain: chainOf(
        // a refund the books never saw: the balance is 100 lower
        batchChain(1, { balance: 700n }),
        // a claim the books never saw
        batchChain(2, { totalClaimed: 550n, receiverClaimed: 950n }),
        // the receiver was paid everything: this channel is settled up to its 500, the books say 300
        batchChain(3, { receiverSettled: 900n }),
        // settled in the books beyond what was ever claimed on chain
        batchChain(4, { totalClaimed: 250n }),
      ),
      opened: [],
      at: AT,
    });
    expect(rows.map((r) => [r.kind, r.reference, r.expected, r.actual, r.details?.figure])).toEqual([
      ['channel_deposit_mismatch', id(1), 800n, 700n, 'balance (deposit − refunded)'],
      ['channel_claimed_mismatch', id(2), 500n, 550n, 'claimed'],
      ['channel_settled_mismatch', id(3), 300n, 500n, 'settled'],
      ['channel_claimed_mismatch', id(4), 500n, 250n, 'claimed'],
      ['channel_settled_mismatch', id(4), 300n, 250n, 'settled'],
    ]);
  });

  it('finds nothing when every channel is what its escrow says, open or finalized', () => {
    const books = [booked(1), booked(2, { state: 'closed', settled: 400n, refunded: 600n })];
    const chain = chainOf(onChain(1), onChain(2, { finalized: true, settled: 400n }));
    expect(channelBreaks({ books, chain, opened: [], at: AT })).toEqual([]);
  });

  it('names each disagreement with the escrow, with what the books and the chain say', () => {
    const books = [
      booked(1),
      booked(2),
      booked(3, { state: 'closed', settled: 300n, refunded: 700n }),
      booked(4),
      booked(5),
      booked(6, { state: 'closed', settled: 300n, refunded: 600n }),
    ];
    const chain = chainOf(
      onChain(1, { settled: 350n }),
      onChain(2, { deposit: 1500n }),
      onChain(3),
      onChain(4, { finalized: true }),
      onChain(5, { exists: false, deposit: 0n, settled: 0n }),
      onChain(6, { finalized: true }),
      onChain(7, { deposit: 70n, settled: 0n }),
    );
    const opened = [
      {
        channelId: id(7),
        network: NETWORK,
        escrow: ESCROW,
        payer: '0xp',
        payee: '0xpayee',
        token: TOKEN,
        deposit: 70n,
        transactionHash: '0xt',
        blockNumber: 9n,
        occurredAt: AT,
      },
      {
        channelId: id(1),
        network: NETWORK,
        escrow: ESCROW,
        payer: '0xp',
        payee: '0xpayee',
        token: TOKEN,
        deposit: 1000n,
        transactionHash: '0xs',
        blockNumber: 8n,
        occurredAt: AT,
      },
    ];
    const rows = channelBreaks({ books, chain, opened, at: AT });
    expect(kinds(rows)).toEqual([
      ['channel_settled_mismatch', id(1)],
      ['channel_deposit_mismatch', id(2)],
      ['channel_not_finalized', id(3)],
      ['channel_closed_on_chain_not_in_books', id(4)],
      ['channel_not_on_chain', id(5)],
      ['channel_refunded_mismatch', id(6)],
      ['channel_unknown_to_books', id(7)],
    ]);
    expect(rows[0]).toMatchObject({
      expected: 300n,
      actual: 350n,
      difference: 50n,
      entryKind: 'channel',
      source: 'chain',
      details: { figure: 'settled', block: '42' },
    });
    expect(rows[5]).toMatchObject({ expected: 600n, actual: 700n, difference: 100n });
    expect(rows[6]).toMatchObject({ expected: 0n, actual: 70n, asset: `${NETWORK}/${TOKEN}`, details: { transactionHash: '0xt' } });
  });

  it('checks prepaid balances against their transfers and top-ups against their payments', () => {
    const topUp = (n: number, amount: bigint, funding: bigint[]) => ({ transferId: `t${n}`, amount, paymentReference: `0xpay${n}`, occurredAt: AT, funding });
    const rows = prepaidBreaks(
      [
        { accountId: 'a', payer: '0xclean', asset: 'stripe/usd', stored: 700n, held: 100n, recomputed: 700n, topUps: [topUp(1, 1000n, [1000n])] },
        {
          accountId: 'c',
          payer: '0xpayer',
          asset: `${NETWORK}/${TOKEN}`,
          stored: 300n,
          held: 0n,
          recomputed: 300n,
          // paid by the payer itself, then by someone else
          topUps: [
            { ...topUp(4, 100n, [100n]), senders: ['0xpayer'] },
            { ...topUp(5, 200n, [200n]), senders: ['0xother'] },
          ],
        },
        {
          accountId: 'b',
          payer: '0xbroken',
          asset: `${NETWORK}/${TOKEN}`,
          stored: 50n,
          held: 80n,
          recomputed: 40n,
          topUps: [topUp(2, 500n, []), topUp(3, 300n, [250n])],
        },
      ],
      AT,
    );
    expect(kinds(rows)).toEqual([
      ['prepaid_funding_mismatch', '0xpay5'],
      ['prepaid_funding_missing', '0xpay2'],
      ['prepaid_funding_mismatch', '0xpay3'],
      ['prepaid_balance_mismatch', '0xbroken'],
      ['prepaid_negative', '0xbroken'],
    ]);
    expect(rows[0].details).toMatchObject({ payer: '0xpayer', paidBy: '0xother' });
    expect(rows.map((r) => [r.expected, r.actual, r.difference])).toEqual([
      [200n, 200n, 0n],
      [500n, undefined, undefined],
      [300n, 250n, -50n],
      [40n, 50n, 10n],
      [0n, -30n, -30n],
    ]);
  });

  it('are kept by reconcile whatever their time, counted, and survive JSON and CSV', () => {
    const rows = channelBreaks({ books: [booked(1)], chain: chainOf(onChain(1, { settled: 350n })), opened: [], at: new Date('2030-01-01T00:00:00Z') });
    const report = reconcile({
      ledger: [],
      external: [],
      period: { from: new Date('2026-12-01T00:00:00Z'), to: new Date('2026-12-02T00:00:00Z') },
      pendingWindowMs: 0,
      now: AT,
      balanceChecks: { rows, checked: { channels: 1, prepaidBalances: 0, topUps: 0, blocks: { [NETWORK]: '42' } } },
    });
    expect(report.summary).toMatchObject({ breaks: 1, counts: { channel_settled_mismatch: 1 }, checked: { channels: 1 } });
    expect(report.totals[0].breaks.channel_settled_mismatch).toBe(1);
    expect(reportFromJson(JSON.parse(JSON.stringify(reportToJson(report))))).toEqual(report);
    const line = toCsv(report).split('\r\n')[1];
    expect(line.startsWith(`channel_settled_mismatch,chain,${NETWORK}/${TOKEN},channel,${id(1)},`)).toBe(true);
    // expected, actual, then the details (the difference is in its usual column)
    expect(line).toContain(',300,350,network=eip155:31337 escrow=');
  });
});
