import { Injectable } from '@nestjs/common';
import {
  AccountCode,
  AccountFlag,
  chartAccount,
  chartAccountId,
  isSuccess,
  prepaidAccountId,
  prepaidTransferId,
  TransferCode,
  TransferFlag,
  type AccountInput,
  type TransferInput,
  type TransferResult,
  type TransferResultCode,
} from '@mp/ledger';
import { ProblemError } from '@mp/platform';
import { LedgerService } from '../core/ledger.service';

/** A payer's prepaid balance in one asset, in atomic units. */
export interface PrepaidBalance {
  payer: string;
  asset: string;
  /** what may be held or charged now: deposited − spent − held */
  available: bigint;
  /** reserved by holds not yet captured or released */
  held: bigint;
  /** every top-up */
  deposited: bigint;
  /** every capture and charge */
  spent: bigint;
}

export interface TopUp {
  payer: string;
  asset: string;
  amount: bigint;
  /** the funding payment as the facilitator settled it: a transaction hash, a Stripe PaymentIntent `pi_…` */
  paymentReference: string;
}

export interface Draw {
  /** the merchant's id for this call: the same id again is the same draw, never a second one */
  id: string;
  payer: string;
  asset: string;
  amount: bigint;
}

export interface Hold extends Draw {
  /** seconds before an uncaptured hold lapses and its amount returns to the balance */
  timeoutSeconds: number;
}

/** Whether an operation wrote something now (201) or found it done before (200, the same answer). */
export interface Outcome {
  created: boolean;
  balance: PrepaidBalance;
}

/**
 * Prepaid balances on the double-entry core: a payer's balance is one account (code `prepaid`, never below zero), a
 * top-up moves a settled payment's amount from the merchant's revenue to it, and a metered call spends from it back to
 * revenue: a hold for the most the call may cost (a pending transfer), then a capture of what it did cost (the rest is
 * released), or a charge when the price is known. Every operation is one transfer under an id derived from the
 * merchant's key, so a retry is answered from the book and the limit is checked by the core under its locks: concurrent
 * draws never overdraw.
 */
@Injectable()
export class PrepaidBalances {
  constructor(private readonly ledger: LedgerService) {}

  async balance(merchantId: string, payer: string, asset: string): Promise<PrepaidBalance> {
    const [account] = await this.ledger.lookupAccounts(merchantId, [prepaidAccountId(payer, asset)]);
    if (!account) return { payer, asset, available: 0n, held: 0n, deposited: 0n, spent: 0n };
    return {
      payer,
      asset,
      available: account.creditsPosted - account.debitsPosted - account.debitsPending,
      held: account.debitsPending,
      deposited: account.creditsPosted,
      spent: account.debitsPosted,
    };
  }

  /** Credits a settled payment to the payer's balance, once per payment reference and asset. */
  async topUp(merchantId: string, topUp: TopUp): Promise<Outcome> {
    const { payer, asset, amount, paymentReference } = topUp;
    await this.openAccounts(merchantId, payer, asset);
    const [result] = await this.ledger.createTransfers(merchantId, [
      {
        id: prepaidTransferId('top-up', `${asset}:${paymentReference}`),
        debitAccountId: chartAccountId('revenue', asset),
        creditAccountId: prepaidAccountId(payer, asset),
        amount,
        asset,
        code: TransferCode.topUp,
        flags: 0,
        reference: paymentReference,
      },
    ]);
    if (!isSuccess(result.result)) {
      if (result.result.startsWith('exists_with_different_'))
        throw new ProblemError('balance_conflict', `payment ${paymentReference} already funded a top-up of another payer or amount`, {
          paymentReference,
        });
      throw unexpected('top-up', result);
    }
    return { created: result.result === 'created', balance: await this.balance(merchantId, payer, asset) };
  }

  /** Reserves up to `amount` for a call whose cost is known only after it ran; 402 when the balance is short. */
  hold(merchantId: string, hold: Hold): Promise<Outcome> {
    return this.spend(merchantId, hold, { id: prepaidTransferId('hold', hold.id), flags: TransferFlag.pending, timeout: hold.timeoutSeconds });
  }

  /** Spends `amount` at once, for a call whose price is known before it runs; 402 when the balance is short. */
  charge(merchantId: string, draw: Draw): Promise<Outcome> {
    return this.spend(merchantId, draw, { id: prepaidTransferId('charge', draw.id), flags: 0 });
  }

  /**
   * Draws a subscription's usage charge (the renewal scan's, never the merchant's API): the same transfer as a charge,
   * under the ledger's own id for it; 402 (insufficient_balance, with topUpNeeded) when the balance is short.
   */
  subscriptionUsage(merchantId: string, draw: Draw): Promise<Outcome> {
    return this.spend(merchantId, draw, { id: prepaidTransferId('subscription-usage', draw.id), flags: 0 });
  }

  /** Spends what the call cost (at most the hold) and releases the rest; 0 releases it all. */
  async capture(merchantId: string, holdId: string, amount: bigint): Promise<{ created: boolean; result: TransferResultCode }> {
    if (amount === 0n) return this.release(merchantId, holdId);
    const result = await this.ledger.postPending(merchantId, {
      id: prepaidTransferId('capture', holdId),
      pendingId: prepaidTransferId('hold', holdId),
      amount,
    });
    return this.settled(holdId, 'capture', result);
  }

  /** Returns the whole hold to the balance. */
  async release(merchantId: string, holdId: string): Promise<{ created: boolean; result: TransferResultCode }> {
    const result = await this.ledger.voidPending(merchantId, { id: prepaidTransferId('release', holdId), pendingId: prepaidTransferId('hold', holdId) });
    return this.settled(holdId, 'release', result);
  }

  private async spend(merchantId: string, draw: Draw, transfer: Pick<TransferInput, 'id' | 'flags' | 'timeout'>): Promise<Outcome> {
    const { payer, asset, amount } = draw;
    const [result] = await this.ledger.createTransfers(merchantId, [
      {
        ...transfer,
        debitAccountId: prepaidAccountId(payer, asset),
        creditAccountId: chartAccountId('revenue', asset),
        amount,
        asset,
        code: TransferCode.usage,
        reference: draw.id,
      },
    ]);
    // a draw refused for want of funds stays refused under its id (the core remembers it): a retry gets the same 402
    const code = result.result === 'id_already_failed' ? result.firstResult : result.result;
    if (code === 'exceeds_credits' || code === 'debit_account_not_found') {
      const balance = await this.balance(merchantId, payer, asset);
      throw new ProblemError('insufficient_balance', `the prepaid balance of ${payer} has ${balance.available} of the ${amount} this call needs`, {
        payer,
        asset,
        available: balance.available.toString(),
        required: amount.toString(),
        topUpNeeded: (amount - balance.available).toString(),
      });
    }
    if (code?.startsWith('exists_with_different_'))
      throw new ProblemError('balance_conflict', `draw ${draw.id} was made before with another payer, asset or amount`, { id: draw.id });
    if (!isSuccess(result.result)) throw unexpected('draw', result);
    return { created: result.result === 'created', balance: await this.balance(merchantId, payer, asset) };
  }

  private settled(holdId: string, step: 'capture' | 'release', result: TransferResult): { created: boolean; result: TransferResultCode } {
    if (isSuccess(result.result)) return { created: result.result === 'created', result: result.result };
    const code = result.result === 'id_already_failed' ? result.firstResult : result.result;
    switch (code) {
      case 'pending_transfer_not_found':
        throw new ProblemError('not_found', `no hold ${holdId}`);
      case 'exceeds_pending_transfer_amount':
        throw new ProblemError('validation_failed', `the capture is more than hold ${holdId} reserved`, {
          invalidParams: [{ name: 'amount', reason: 'must be at most the amount held' }],
        });
      case 'pending_transfer_already_posted':
      case 'pending_transfer_already_voided':
      case 'pending_transfer_expired':
      case 'exists_with_different_amount':
        throw new ProblemError('hold_closed', `hold ${holdId} cannot be ${step === 'capture' ? 'captured' : 'released'} (${code})`, { holdId, result: code });
      default:
        throw unexpected(step, result);
    }
  }

  /** The payer's balance and the merchant's revenue in the asset: created with the first top-up, found after. */
  private async openAccounts(merchantId: string, payer: string, asset: string): Promise<void> {
    const accounts: AccountInput[] = [
      chartAccount('revenue', asset, 'credit'),
      {
        id: prepaidAccountId(payer, asset),
        asset,
        code: AccountCode.prepaid,
        flags: AccountFlag.debits_must_not_exceed_credits,
        normalBalance: 'credit',
        reference: payer,
      },
    ];
    const results = await this.ledger.createAccounts(merchantId, accounts);
    const failed = results.find((r) => r.result !== 'created' && r.result !== 'exists');
    if (failed) throw new Error(`the prepaid accounts of ${payer} in ${asset} could not be opened: ${failed.result}`);
  }
}

function unexpected(step: string, result: TransferResult): Error {
  return new Error(`prepaid ${step} refused by the ledger: ${result.result}${result.firstResult ? ` (${result.firstResult})` : ''}`);
}
