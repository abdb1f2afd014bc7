import { channelEventMessageSchema, type ChannelEventMessage } from '@mp/clients';
import { channelTransferId } from '@mp/ledger';
import { channelAccounts, figuresOf, missingBefore, planChannelEvent, stepTransfer } from './channel-booking';

const CHANNEL = `0x${'ab'.repeat(32)}`;
const snapshot = {
  channelId: CHANNEL,
  merchantId: '5f0c6b8e-3c1d-4d5e-8f9a-0b1c2d3e4f50' as string | null,
  network: 'eip155:31337',
  escrow: `0x${'e5'.repeat(20)}`,
  asset: `0x${'c0'.repeat(20)}`,
  payer: `0x${'01'.repeat(20)}`,
  payee: `0x${'02'.repeat(20)}`,
  deposit: '1000',
  acceptedCumulative: '300',
  spent: '200',
  settled: '100',
  state: 'open' as 'open' | 'closing' | 'closed',
};
const TX = `0x${'11'.repeat(32)}`;
const event = (type: ChannelEventMessage['type'], data: object, channel: Partial<typeof snapshot> = {}): ChannelEventMessage =>
  channelEventMessageSchema.parse({ eventId: '7', type, occurredAt: '2026-12-02T12:00:00Z', data, channel: { ...snapshot, ...channel } });

describe('channel booking', () => {
  it('plans one step per money event, from where its figure stood before', () => {
    const voucher = planChannelEvent(event('channel.voucher_accepted', { delta: '100', acceptedCumulative: '300' }));
    expect(voucher).toMatchObject({ ok: true, plan: { step: { figure: 'accepted', before: 200n, after: 300n, reference: 'event:7' } } });
    const topUp = planChannelEvent(event('channel.topped_up', { amount: '400', deposit: '1000', txHash: TX }));
    expect(topUp).toMatchObject({
      ok: true,
      plan: { step: { figure: 'deposit', before: 600n, after: 1000n, reference: TX }, asset: `eip155:31337/0x${'c0'.repeat(20)}` },
    });
    const closed = planChannelEvent(event('channel.closed', { by: 'close', refunded: '900', settled: '100', txHash: TX }, { state: 'closed' }));
    expect(closed).toMatchObject({ ok: true, plan: { state: 'closed', step: { figure: 'refunded', before: 0n, after: 900n }, expected: { refunded: 900n } } });
    // a close with nothing to refund moves no money, a close request neither
    const allSettled = planChannelEvent(
      event('channel.closed', { by: 'close', refunded: '0', settled: '1000', txHash: TX }, { state: 'closed', settled: '1000', acceptedCumulative: '1000' }),
    );
    expect(allSettled.ok && allSettled.plan?.step).toBeUndefined();
    const requested = planChannelEvent(event('channel.close_requested', { graceEndsAt: '2026-12-02T12:15:00Z', txHash: TX }, { state: 'closing' }));
    expect(requested).toMatchObject({ ok: true, plan: { state: 'closing', graceEndsAt: new Date('2026-12-02T12:15:00Z') } });
    expect(requested.ok && requested.plan?.step).toBeUndefined();
  });

  it('refuses what breaks the rules or contradicts its own snapshot, and skips an unclaimed channel', () => {
    const refused = (e: ChannelEventMessage) => {
      const planned = planChannelEvent(e);
      return planned.ok ? undefined : planned.reason;
    };
    expect(refused(event('channel.voucher_accepted', { delta: '100', acceptedCumulative: '350' }))).toMatch(/accepted 350 is not the snapshot's 300/);
    expect(refused(event('channel.voucher_accepted', { delta: '400', acceptedCumulative: '300' }))).toMatch(/step of 400 is more than the total 300/);
    expect(refused(event('channel.spent', { chargeId: 'c', amount: '10', spent: '400' }, { spent: '400' }))).toMatch(/spent 400 exceeds accepted 300/);
    expect(refused(event('channel.settled', { delta: '10', settled: '400', txHash: TX }, { settled: '400' }))).toMatch(/settled 400 exceeds accepted 300/);
    expect(refused(event('channel.voucher_accepted', { delta: '900', acceptedCumulative: '1200' }, { acceptedCumulative: '1200' }))).toMatch(
      /accepted 1200 exceeds the deposit 1000/,
    );
    expect(refused(event('channel.closed', { by: 'withdraw', refunded: '800', settled: '100', txHash: TX }, { state: 'closed' }))).toMatch(
      /settled 100 \+ refunded 800 is not the deposit 1000/,
    );
    expect(planChannelEvent(event('channel.opened', { deposit: '1000', txHash: TX }, { merchantId: null }))).toEqual({ ok: true, plan: undefined });
  });

  it('books each figure on its own account, so the balances read back as the figures, and names what is missing', () => {
    const planned = planChannelEvent(event('channel.spent', { chargeId: 'c', amount: '50', spent: '200' }));
    if (!planned.ok || !planned.plan) throw new Error('not planned');
    const transfer = stepTransfer(CHANNEL, planned.plan.asset, planned.plan.step!);
    expect(transfer).toMatchObject({ id: channelTransferId(CHANNEL, 'spent', 150n), amount: 50n, reference: 'c' });
    // the books with everything before this event: spent 150; a voucher not booked yet shows as a gap
    expect(missingBefore({ deposit: 1000n, accepted: 300n, spent: 150n, settled: 100n, refunded: 0n }, planned.plan)).toEqual([]);
    expect(missingBefore({ deposit: 1000n, accepted: 200n, spent: 150n, settled: 100n, refunded: 0n }, planned.plan)).toEqual([
      'accepted is 200 in the books, the event says 300',
    ]);
    // roles in order: 0 escrow, 1 deposit, 2 accepted, 3 unspent, 4 spent, 5 settled, 6 refunded
    const accounts = channelAccounts(CHANNEL, planned.plan.asset).map((a) => ({ ...a, normalBalance: a.normalBalance!, debitsPosted: 0n, creditsPosted: 0n }));
    const move = (debit: number, credit: number, amount: bigint) => {
      accounts[debit].debitsPosted += amount;
      accounts[credit].creditsPosted += amount;
    };
    move(0, 1, 1000n);
    move(2, 3, 300n);
    move(3, 4, 200n);
    move(5, 0, 100n);
    expect(figuresOf(accounts, CHANNEL)).toEqual({ deposit: 1000n, accepted: 300n, spent: 200n, settled: 100n, refunded: 0n, held: 900n, unspent: 100n });
  });

  describe('x402 batch-settlement channels', () => {
    const batch = { ...snapshot, scheme: 'x402-batch' as const, deposit: '1000', acceptedCumulative: '300', spent: '300', settled: '100', refunded: '200' };
    const batchEvent = (type: ChannelEventMessage['type'], data: object, channel: Partial<typeof batch> = {}): ChannelEventMessage =>
      channelEventMessageSchema.parse({ eventId: '9', type, occurredAt: '2026-12-02T12:00:00Z', data, channel: { ...batch, ...channel } });
    const refused = (e: ChannelEventMessage) => {
      const planned = planChannelEvent(e);
      return planned.ok ? undefined : planned.reason;
    };

    it('books deposits, claims (accepted then spent), settles and refunds on the same figures, its refunded carried by the snapshot', () => {
      const claimedAccepted = planChannelEvent(batchEvent('channel.voucher_accepted', { delta: '100', acceptedCumulative: '300' }, { spent: '200' }));
      expect(claimedAccepted).toMatchObject({
        ok: true,
        plan: { scheme: 'x402-batch', step: { figure: 'accepted', before: 200n, after: 300n }, expected: { spent: 200n, refunded: 200n } },
      });
      const claimedSpent = planChannelEvent(batchEvent('channel.spent', { chargeId: `claim:${TX}`, amount: '100', spent: '300' }));
      expect(claimedSpent).toMatchObject({ ok: true, plan: { step: { figure: 'spent', before: 200n, after: 300n, reference: `claim:${TX}` } } });
      const settled = planChannelEvent(batchEvent('channel.settled', { delta: '100', settled: '100', txHash: TX }));
      expect(settled).toMatchObject({ ok: true, plan: { step: { figure: 'settled', before: 0n, after: 100n } } });
      // a partial refund: the channel stays open, refunded moves from 50 to 200
      const refunded = planChannelEvent(batchEvent('channel.refunded', { by: 'refund', amount: '150', refunded: '200', txHash: TX }));
      expect(refunded).toMatchObject({ ok: true, plan: { state: 'open', step: { figure: 'refunded', before: 50n, after: 200n, reference: TX } } });
      // a deposit after a refund: the books' refunded must already be the snapshot's (else a gap)
      const topUp = planChannelEvent(batchEvent('channel.topped_up', { amount: '500', deposit: '1000', txHash: TX }));
      if (!topUp.ok || !topUp.plan) throw new Error('not planned');
      expect(missingBefore({ deposit: 500n, accepted: 300n, spent: 300n, settled: 100n, refunded: 0n }, topUp.plan)).toEqual([
        'refunded is 0 in the books, the event says 200',
      ]);
      expect(missingBefore({ deposit: 500n, accepted: 300n, spent: 300n, settled: 100n, refunded: 200n }, topUp.plan)).toEqual([]);
    });

    it('refuses a batch snapshot the contract could not hold, and the kinds of event a batch channel never has', () => {
      expect(refused(batchEvent('channel.voucher_accepted', { delta: '600', acceptedCumulative: '900' }, { acceptedCumulative: '900', spent: '300' }))).toMatch(
        /claimed 900 \+ refunded 200 exceeds the deposit 1000/,
      );
      expect(refused(batchEvent('channel.settled', { delta: '100', settled: '100', txHash: TX }, { spent: '200' }))).toMatch(/spent 200 is not claimed 300/);
      expect(refused(batchEvent('channel.closed', { by: 'close', refunded: '700', settled: '300', txHash: TX }, { state: 'closed' }))).toMatch(
        /never closed on chain/,
      );
      expect(refused(batchEvent('channel.refunded', { by: 'refund', amount: '300', refunded: '250', txHash: TX }, { refunded: '250' }))).toMatch(
        /step of 300 is more than the total 250/,
      );
      // a session channel has no refunds of its own, and the contract keeps refunded to batch channels
      expect(refused(event('channel.refunded', { by: 'refund', amount: '10', refunded: '10', txHash: TX }))).toMatch(/refunded by its close only/);
      expect(
        channelEventMessageSchema.safeParse({
          eventId: '1',
          type: 'channel.opened',
          occurredAt: '2026-12-02T12:00:00Z',
          data: { deposit: '1', txHash: TX },
          channel: { ...batch, refunded: undefined },
        }).success,
      ).toBe(false);
      expect(
        channelEventMessageSchema.safeParse({
          eventId: '1',
          type: 'channel.opened',
          occurredAt: '2026-12-02T12:00:00Z',
          data: { deposit: '1', txHash: TX },
          channel: { ...snapshot, refunded: '0' },
        }).success,
      ).toBe(false);
    });
  });
});
