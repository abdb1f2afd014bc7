import { randomUUID } from 'node:crypto';
import { AccountCode, TransferCode, TransferFlag, type TransferInput } from '@mp/ledger';
import { newMerchant, startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';
const EUR = 'stripe/eur';
const HOUR = 3_600_000;

/** The reads reconciliation and ingestion make through LedgerService instead of the ledger's tables. */
describe('LedgerService reads by account code, and receiving addresses', () => {
  let running: RunningLedger;
  beforeAll(async () => {
    running = await startLedger({ PENDING_EXPIRY_INTERVAL_MS: '0' });
  });
  afterAll(() => running?.close());

  const around = () => ({ from: new Date(Date.now() - HOUR), to: new Date(Date.now() + HOUR) });

  /** A clearing account (debit side of payments) and a revenue account in the asset. */
  async function chart(merchant: string, asset = USD) {
    const clearing = randomUUID();
    const revenue = randomUUID();
    const results = await running.ledger.createAccounts(merchant, [
      { id: clearing, asset, code: AccountCode.payerClearing, flags: 0 },
      { id: revenue, asset, code: AccountCode.revenue, flags: 0 },
    ]);
    expect(results.map((r) => r.result)).toEqual(['created', 'created']);
    return { clearing, revenue };
  }

  async function book(merchant: string, transfer: Partial<TransferInput> & Pick<TransferInput, 'debitAccountId' | 'creditAccountId'>): Promise<string> {
    const id = randomUUID();
    const [{ result }] = await running.ledger.createTransfers(merchant, [{ id, amount: 10n, asset: USD, code: TransferCode.payment, flags: 0, ...transfer }]);
    expect(result).toBe('created');
    return id;
  }

  it('reads the transfers of the given codes on revenue accounts, each pending one with its resolution', async () => {
    const m = newMerchant();
    const { clearing, revenue } = await chart(m);
    const other = await chart(m, USD);
    const paid = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 100n, reference: 'pi_1' });
    const held = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 60n, flags: TransferFlag.pending });
    const postId = randomUUID();
    expect(await running.ledger.postPending(m, { id: postId, pendingId: held, amount: 45n, reference: '0xabc' })).toMatchObject({ result: 'created' });
    const voidedHold = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 7n, flags: TransferFlag.pending });
    expect(await running.ledger.voidPending(m, { id: randomUUID(), pendingId: voidedHold })).toMatchObject({ result: 'created' });
    const open = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 5n, flags: TransferFlag.pending, timeout: 3600 });
    const refund = await book(m, { debitAccountId: revenue, creditAccountId: clearing, amount: 3n, code: TransferCode.refund });
    await book(m, { debitAccountId: revenue, creditAccountId: clearing, amount: 2n, code: TransferCode.gas });
    // no revenue account on either side: not part of the book read
    await book(m, { debitAccountId: clearing, creditAccountId: other.clearing, amount: 1n });
    // another merchant's book stays out
    const stranger = newMerchant();
    const theirs = await chart(stranger);
    await book(stranger, { debitAccountId: theirs.clearing, creditAccountId: theirs.revenue });

    const read = await running.ledger.accountCodeTransfers(m, {
      accountCode: AccountCode.revenue,
      codes: [TransferCode.payment, TransferCode.refund, TransferCode.fee],
      period: around(),
    });
    const byId = new Map(read.map((t) => [t.id, t]));
    expect([...byId.keys()].sort()).toEqual([paid, held, voidedHold, open, refund].sort());
    expect(byId.get(paid)).toMatchObject({
      asset: USD,
      code: TransferCode.payment,
      flags: 0,
      amount: 100n,
      reference: 'pi_1',
      credits: true,
      resolution: undefined,
      expiresAt: null,
    });
    expect(byId.get(held)).toMatchObject({
      amount: 60n,
      flags: TransferFlag.pending,
      credits: true,
      resolution: { flags: TransferFlag.post_pending_transfer, amount: 45n, reference: '0xabc' },
    });
    expect(byId.get(held)!.resolution!.ts).toBeInstanceOf(Date);
    expect(byId.get(voidedHold)!.resolution).toMatchObject({ flags: TransferFlag.void_pending_transfer, amount: 7n });
    expect(byId.get(open)).toMatchObject({ amount: 5n, resolution: undefined });
    expect(byId.get(open)!.expiresAt).toBeInstanceOf(Date);
    expect(byId.get(refund)).toMatchObject({ code: TransferCode.refund, amount: 3n, credits: false });
    expect(read.some((t) => t.id === postId)).toBe(false);

    const onlyRefunds = await running.ledger.accountCodeTransfers(m, { accountCode: AccountCode.revenue, codes: [TransferCode.refund], period: around() });
    expect(onlyRefunds.map((t) => t.id)).toEqual([refund]);
    const before = await running.ledger.accountCodeTransfers(m, {
      accountCode: AccountCode.revenue,
      codes: [TransferCode.payment],
      period: { from: new Date(Date.now() - 2 * HOUR), to: new Date(Date.now() - HOUR) },
    });
    expect(before).toEqual([]);
  });

  it('reads the corrections of the given transfers, and the corrections of those, but no other', async () => {
    const m = newMerchant();
    const { clearing, revenue } = await chart(m);
    const paid = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 100n });
    const elsewhere = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 50n });
    const takeBack = await book(m, { debitAccountId: revenue, creditAccountId: clearing, amount: 4n, code: TransferCode.correction, reference: paid });
    const giveBack = await book(m, { debitAccountId: clearing, creditAccountId: revenue, amount: 1n, code: TransferCode.correction, reference: takeBack });
    await book(m, { debitAccountId: revenue, creditAccountId: clearing, amount: 9n, code: TransferCode.correction, reference: elsewhere });
    // a pending correction is not a correction yet
    await book(m, {
      debitAccountId: revenue,
      creditAccountId: clearing,
      amount: 2n,
      code: TransferCode.correction,
      reference: paid,
      flags: TransferFlag.pending,
    });

    const corrections = await running.ledger.correctionsOf(m, AccountCode.revenue, [paid]);
    const byId = new Map(corrections.map((c) => [c.id, c]));
    expect([...byId.keys()].sort()).toEqual([takeBack, giveBack].sort());
    expect(byId.get(takeBack)).toMatchObject({ corrects: paid, amount: 4n, credits: false, code: TransferCode.correction });
    expect(byId.get(giveBack)).toMatchObject({ corrects: takeBack, amount: 1n, credits: true });
    expect(await running.ledger.correctionsOf(m, AccountCode.revenue, [])).toEqual([]);
    expect(await running.ledger.correctionsOf(newMerchant(), AccountCode.revenue, [paid])).toEqual([]);
  });

  it("lists the assets of a merchant's accounts of a code, and the merchants that have one", async () => {
    const m = newMerchant();
    await chart(m, USD);
    await chart(m, EUR);
    const clearingOnly = newMerchant();
    expect(await running.ledger.createAccounts(clearingOnly, [{ id: randomUUID(), asset: USD, code: AccountCode.payerClearing, flags: 0 }])).toEqual([
      { result: 'created' },
    ]);

    expect(await running.ledger.accountAssets(m, AccountCode.revenue)).toEqual([EUR, USD]);
    expect(await running.ledger.accountAssets(clearingOnly, AccountCode.revenue)).toEqual([]);
    const merchants = await running.ledger.merchantsWithAccountCode(AccountCode.revenue);
    expect(merchants).toContain(m);
    expect(merchants).not.toContain(clearingOnly);
    expect(merchants).toEqual([...merchants].sort());
    expect(await running.ledger.merchantsWithAccountCode(AccountCode.payerClearing)).toContain(clearingOnly);
  });

  it('remembers receiving addresses once, lowercase, per merchant', async () => {
    const m = newMerchant();
    const address = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
    await running.ledger.rememberReceivingAddress(m, 'eip155:8453', address);
    await running.ledger.rememberReceivingAddress(m, 'eip155:8453', address.toLowerCase());
    await running.ledger.rememberReceivingAddress(m, 'eip155:1', address);
    expect(await running.ledger.receivingAddressesOf(m)).toEqual([
      { network: 'eip155:1', address: address.toLowerCase() },
      { network: 'eip155:8453', address: address.toLowerCase() },
    ]);
    expect(await running.ledger.receivingAddressesOf(newMerchant())).toEqual([]);
  });
});
