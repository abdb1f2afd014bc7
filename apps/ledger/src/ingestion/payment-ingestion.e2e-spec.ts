import { randomUUID } from 'node:crypto';
import type { PaymentEventMessage } from '@mp/clients';
import { chartAccountId, nativeAsset, paymentTransferId, TransferCode, type TransferInput } from '@mp/ledger';
import { startLedger, type RunningLedger } from '../../../../test/support/ledger-app';
import { BookingRefusedError, PaymentIngestion } from './payment-ingestion.service';
import { gasAccounts, gasTransfer, holdTransfer, paymentAccounts, paymentAsset, postTransfer } from './payment-booking';

const NETWORK = 'eip155:84532';
const TOKEN = '0x036cbd53842c5426634e7929541ec2318f3dcf7e';
const ASSET = `${NETWORK}/${TOKEN}`;
const GAS = nativeAsset(NETWORK);

/**
 * The booking's round trips on the real ledger: an event's post (or void) and its gas go in one call once the hold is
 * known to be booked, accounts and receiving addresses already written are not written again, and none of that
 * changes what is booked or hides a refusal.
 */
describe('PaymentIngestion: fewer round trips, the same books', () => {
  let ledger: RunningLedger;
  let ingestion: PaymentIngestion;

  beforeAll(async () => {
    ledger = await startLedger();
    ingestion = ledger.app.get(PaymentIngestion);
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await ledger?.close();
  });

  const txHash = `0x${'ab'.repeat(32)}`;
  const event = (
    merchantId: string,
    paymentId: string,
    eventId: number,
    type: PaymentEventMessage['type'],
    data: Record<string, unknown> = {},
    amount = '10000',
  ): PaymentEventMessage =>
    ({
      eventId: String(eventId),
      type,
      paymentId,
      merchantId,
      occurredAt: new Date().toISOString(),
      data,
      payment: {
        id: paymentId,
        state: 'verified',
        protocol: 'x402',
        rail: 'evm',
        network: NETWORK,
        asset: TOKEN,
        payer: '0x277b6edc5e0664bda72eb0c84fe1e44af4befe6e',
        payTo: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2',
        amount,
        nonce: `0x${'01'.repeat(32)}`,
        scheme: 'exact',
        challengeId: null,
        reference: null,
        txHash: null,
        merchantId,
      },
    }) as PaymentEventMessage;
  const confirmed = (merchantId: string, paymentId: string, eventId: number, amount?: string) =>
    event(merchantId, paymentId, eventId, 'payment.confirmed', { txHash, blockNumber: '7', gasUsed: '21000', gasFee: '42000' }, amount);

  /** The ledger's calls while `fn` runs: real calls, counted. */
  async function calls(fn: () => Promise<unknown>) {
    const transfers = vi.spyOn(ledger.ledger, 'createTransfers');
    const accounts = vi.spyOn(ledger.ledger, 'createAccounts');
    const addresses = vi.spyOn(ledger.ledger, 'rememberReceivingAddress');
    try {
      await fn();
      return {
        transfers: transfers.mock.calls.map(([, batch]) => batch.map((t) => t.id)),
        accounts: accounts.mock.calls.length,
        addresses: addresses.mock.calls.length,
      };
    } finally {
      transfers.mockRestore();
      accounts.mockRestore();
      addresses.mockRestore();
    }
  }

  const snapshot = async (merchantId: string, paymentId: string) => ({
    transfers: (
      await ledger.ledger.lookupTransfers(merchantId, [
        paymentTransferId(paymentId, 'pending'),
        paymentTransferId(paymentId, 'post'),
        paymentTransferId(paymentId, 'gas'),
      ])
    )
      .map(({ id, debitAccountId, creditAccountId, amount, pendingId, asset, code, flags, reference }) => ({
        id,
        debitAccountId,
        creditAccountId,
        amount,
        pendingId,
        asset,
        code,
        flags,
        reference,
      }))
      .sort(byId),
    accounts: (
      await ledger.ledger.lookupAccounts(merchantId, [
        chartAccountId('payerClearing', ASSET),
        chartAccountId('revenue', ASSET),
        chartAccountId('gasExpense', GAS),
        chartAccountId('gasFunding', GAS),
      ])
    )
      .map(({ id, debitsPending, debitsPosted, creditsPending, creditsPosted }) => ({ id, debitsPending, debitsPosted, creditsPending, creditsPosted }))
      .sort(byId),
  });
  // lookups answer in the database's order
  const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);

  it('books the post and the gas in one call after the hold, exactly as booking them one by one did', async () => {
    const merchantId = randomUUID();
    const paymentId = randomUUID();
    const verifiedCalls = await calls(() => ingestion.book(event(merchantId, paymentId, 1, 'payment.verified')));
    expect(verifiedCalls).toEqual({ transfers: [[paymentTransferId(paymentId, 'pending')]], accounts: 1, addresses: 1 });
    const confirmedCalls = await calls(() => ingestion.book(confirmed(merchantId, paymentId, 2)));
    // the hold known, the payment accounts and the address written: only the gas accounts, then post + gas in one call
    expect(confirmedCalls).toEqual({ transfers: [[paymentTransferId(paymentId, 'post'), paymentTransferId(paymentId, 'gas')]], accounts: 1, addresses: 0 });

    // the same event booked step by step, as before, in another merchant's book: the same transfers and balances
    const reference = randomUUID();
    const stepByStep = confirmed(reference, paymentId, 2);
    await ledger.ledger.createAccounts(reference, [...paymentAccounts(ASSET), ...gasAccounts(GAS)]);
    const one = async (t: TransferInput) => expect((await ledger.ledger.createTransfers(reference, [t]))[0].result).toBe('created');
    await one(holdTransfer(stepByStep, paymentAsset(stepByStep)));
    await one(postTransfer(stepByStep, txHash));
    await one(gasTransfer(stepByStep, { asset: GAS, amount: 42000n, reference: txHash }));
    const booked = await snapshot(merchantId, paymentId);
    expect(booked).toEqual(await snapshot(reference, paymentId));
    expect(booked.transfers).toHaveLength(3);
    expect(booked.accounts.find((a) => a.id === chartAccountId('revenue', ASSET))).toMatchObject({ creditsPending: 0n, creditsPosted: 10000n });
    expect(booked.accounts.find((a) => a.id === chartAccountId('gasExpense', GAS))).toMatchObject({ debitsPosted: 42000n });

    // redelivered: nothing new, no account or address written again
    const again = await calls(async () => {
      expect(await ingestion.book(event(merchantId, paymentId, 1, 'payment.verified'))).toBe('booked');
      expect(await ingestion.book(confirmed(merchantId, paymentId, 2))).toBe('booked');
    });
    expect(again).toMatchObject({ accounts: 0, addresses: 0 });
    expect(await snapshot(merchantId, paymentId)).toEqual(booked);
  });

  it('an outcome before its verification: the hold in a call of its own first, then post + gas; the late verification books nothing', async () => {
    const merchantId = randomUUID();
    const paymentId = randomUUID();
    const confirmedCalls = await calls(() => ingestion.book(confirmed(merchantId, paymentId, 2)));
    expect(confirmedCalls.transfers).toEqual([
      [paymentTransferId(paymentId, 'pending')],
      [paymentTransferId(paymentId, 'post'), paymentTransferId(paymentId, 'gas')],
    ]);
    const booked = await snapshot(merchantId, paymentId);
    expect(booked.transfers.map((t) => t.code).sort()).toEqual([TransferCode.payment, TransferCode.payment, TransferCode.gas].sort());
    await ingestion.book(event(merchantId, paymentId, 1, 'payment.verified'));
    expect(await snapshot(merchantId, paymentId)).toEqual(booked);
  });

  it('a hold that disagrees with the stored one is refused every time, and nothing after it is booked', async () => {
    const merchantId = randomUUID();
    const paymentId = randomUUID();
    await ingestion.book(event(merchantId, paymentId, 1, 'payment.verified'));
    // the same payment with another amount: its hold is not the one known, so it is submitted, and refused
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(ingestion.book(confirmed(merchantId, paymentId, 2, '20000'))).rejects.toThrow(BookingRefusedError);
      await expect(ingestion.book(confirmed(merchantId, paymentId, 2, '20000'))).rejects.toThrow(/exists_with_different_amount/);
    }
    expect(await ledger.ledger.lookupTransfers(merchantId, [paymentTransferId(paymentId, 'post'), paymentTransferId(paymentId, 'gas')])).toEqual([]);
  });

  it('an account that exists with another definition is refused every time: the account cache keeps only what was accepted', async () => {
    const merchantId = randomUUID();
    // the merchant's revenue account in this asset, made by hand with another code
    const [made] = await ledger.ledger.createAccounts(merchantId, [{ ...paymentAccounts(ASSET)[1], code: 999 }]);
    expect(made.result).toBe('created');
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(ingestion.book(event(merchantId, randomUUID(), 1, 'payment.verified'))).rejects.toThrow(
        new RegExp(`account ${chartAccountId('revenue', ASSET)} of merchant ${merchantId}: exists_with_different_code`),
      );
    }
  });
});
