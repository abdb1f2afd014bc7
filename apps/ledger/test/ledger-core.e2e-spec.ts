import { randomUUID } from 'node:crypto';
import { AccountFlag, TransferFlag, type TransferInput } from '@mp/ledger';
import { newMerchant, startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';

describe('ledger core on PostgreSQL', () => {
  let running: RunningLedger;
  beforeAll(async () => {
    running = await startLedger({ PENDING_EXPIRY_INTERVAL_MS: '0' });
  });
  afterAll(() => running?.close());

  async function accounts(merchant: string, ...flags: number[]) {
    const inputs = flags.map((f) => ({ id: randomUUID(), asset: USD, code: 1, flags: f }));
    const results = await running.ledger.createAccounts(merchant, inputs);
    expect(results.map((r) => r.result)).toEqual(inputs.map(() => 'created'));
    return inputs.map((a) => a.id);
  }

  const transfer = (dr: string, cr: string, amount: bigint, extra: Partial<TransferInput> = {}): TransferInput => ({
    id: randomUUID(),
    debitAccountId: dr,
    creditAccountId: cr,
    amount,
    asset: USD,
    code: 1,
    flags: 0,
    ...extra,
  });

  it('creates accounts idempotently and reads their balances', async () => {
    const m = newMerchant();
    const [a] = await accounts(m, AccountFlag.debits_must_not_exceed_credits);
    expect(await running.ledger.createAccounts(m, [{ id: a, asset: USD, code: 1, flags: AccountFlag.debits_must_not_exceed_credits }])).toEqual([
      { result: 'exists' },
    ]);
    expect(await running.ledger.createAccounts(m, [{ id: a, asset: USD, code: 2, flags: AccountFlag.debits_must_not_exceed_credits }])).toEqual([
      { result: 'exists_with_different_code' },
    ]);
    const [read] = await running.ledger.lookupAccounts(m, [a]);
    expect(read).toMatchObject({ id: a, asset: USD, normalBalance: 'credit', debitsPosted: 0n, balances: { posted: 0n, pending: 0n, available: 0n } });
    expect(await running.ledger.lookupAccounts(newMerchant(), [a])).toEqual([]);
  });

  it('moves money, holds it, posts part of a hold and voids another, with exact balances', async () => {
    const m = newMerchant();
    const [world, wallet, shop] = await accounts(m, 0, AccountFlag.debits_must_not_exceed_credits, 0);
    const hold = transfer(wallet, shop, 60n, { flags: TransferFlag.pending });
    const hold2 = transfer(wallet, shop, 30n, { flags: TransferFlag.pending, timeout: 3600 });
    const results = await running.ledger.createTransfers(m, [transfer(world, wallet, 100n), hold, hold2, transfer(wallet, shop, 20n)]);
    expect(results.map((r) => r.result)).toEqual(['created', 'created', 'created', 'exceeds_credits']);
    expect(await running.ledger.postPending(m, { id: randomUUID(), pendingId: hold.id, amount: 45n })).toMatchObject({ result: 'created' });
    expect(await running.ledger.voidPending(m, { id: randomUUID(), pendingId: hold2.id })).toMatchObject({ result: 'created' });
    expect(await running.ledger.voidPending(m, { id: randomUUID(), pendingId: hold2.id })).toMatchObject({ result: 'pending_transfer_already_voided' });
    const byId = new Map((await running.ledger.lookupAccounts(m, [world, wallet, shop])).map((a) => [a.id, a]));
    expect(byId.get(wallet)).toMatchObject({ debitsPending: 0n, debitsPosted: 45n, creditsPosted: 100n, balances: { posted: 55n, available: 55n } });
    expect(byId.get(shop)).toMatchObject({ creditsPending: 0n, creditsPosted: 45n });
    expect(await running.ledger.balances(m, wallet)).toEqual({
      debitsPending: 0n,
      debitsPosted: 45n,
      creditsPending: 0n,
      creditsPosted: 100n,
      posted: 55n,
      pending: 55n,
      available: 55n,
    });
    const [stored] = await running.ledger.lookupTransfers(m, [hold.id]);
    expect(stored).toMatchObject({ status: 'posted', amount: 60n, flags: TransferFlag.pending });
    const timeouts = await running.db.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM ledger.pending_timeouts WHERE merchant_id = $1::uuid`, m);
    expect(timeouts).toEqual([]);
  });

  it('expires a pending transfer after its timeout: status at once, release by the sweep, never posted after', async () => {
    const m = newMerchant();
    const [a, b] = await accounts(m, 0, 0);
    const hold = transfer(a, b, 7n, { flags: TransferFlag.pending, timeout: 1 });
    await running.ledger.createTransfers(m, [hold]);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await running.ledger.lookupTransfers(m, [hold.id]))[0].status).toBe('expired');
    expect(await running.ledger.postPending(m, { id: randomUUID(), pendingId: hold.id })).toMatchObject({ result: 'pending_transfer_expired' });
    expect((await running.ledger.lookupAccounts(m, [a]))[0].debitsPending).toBe(7n);
    expect(await running.ledger.expirePendingTransfers()).toBeGreaterThanOrEqual(1);
    expect((await running.ledger.lookupAccounts(m, [a]))[0].debitsPending).toBe(0n);
    expect(await running.ledger.voidPending(m, { id: randomUUID(), pendingId: hold.id })).toMatchObject({ result: 'pending_transfer_expired' });
  });

  it('keeps a transiently failed id failed across requests, and rolls back linked chains', async () => {
    const m = newMerchant();
    const [world, wallet] = await accounts(m, 0, AccountFlag.debits_must_not_exceed_credits);
    const overdraft = transfer(wallet, world, 5n);
    expect((await running.ledger.createTransfers(m, [overdraft]))[0].result).toBe('exceeds_credits');
    await running.ledger.createTransfers(m, [transfer(world, wallet, 10n)]);
    expect(await running.ledger.createTransfers(m, [overdraft])).toEqual([{ result: 'id_already_failed', firstResult: 'exceeds_credits' }]);
    const chain = [transfer(world, wallet, 1n, { flags: TransferFlag.linked }), transfer(wallet, world, 50n)];
    expect((await running.ledger.createTransfers(m, chain)).map((r) => r.result)).toEqual(['linked_event_failed', 'exceeds_credits']);
    expect(await running.ledger.lookupTransfers(m, [chain[0].id])).toEqual([]);
    expect((await running.ledger.lookupAccounts(m, [wallet]))[0].creditsPosted).toBe(10n);
  });

  it('refuses updates and deletes of transfers in the database itself', async () => {
    await expect(
      running.db.$executeRawUnsafe(`UPDATE ledger.transfers SET amount = amount + 1 WHERE seq = (SELECT max(seq) FROM ledger.transfers)`),
    ).rejects.toThrow(/append-only/);
    await expect(running.db.$executeRawUnsafe(`DELETE FROM ledger.transfers WHERE seq = (SELECT max(seq) FROM ledger.transfers)`)).rejects.toThrow(
      /append-only/,
    );
  });
});
