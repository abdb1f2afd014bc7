import { Injectable, Logger } from '@nestjs/common';
import { prepaidTransferId } from '@mp/ledger';
import { ProblemError } from '@mp/platform';
import { PrepaidBalances } from '../balances/prepaid-balances.service';
import { UsageChargesRepository, type UsageChargeToDraw } from './usage-charges.repository';

/** Most usage charges one scan draws. */
const DRAW_LIMIT = 500;

export interface CollectResult {
  paid: number;
  unpaid: number;
}

/** The draw's id: the subscription, period, component and attempt (each refused attempt stays refused in the core). */
export function usageDrawId(c: Pick<UsageChargeToDraw, 'subscriptionId' | 'periodIndex' | 'componentKey' | 'drawAttempt'>): string {
  return `${c.subscriptionId}:${c.periodIndex}:${c.componentKey}:${c.drawAttempt}`;
}

/**
 * Pays recorded usage charges from the payer's prepaid balance, on every renewal scan: the transfer of
 * /balances/charges (prepaid → revenue, code usage), under an id derived from the charge and its draw attempt, so a
 * charge is drawn at most once whatever crashes or concurrent scans do. A short balance leaves it `unpaid` with
 * `topUpNeeded`; it is looked at again every scan and drawn once a top-up covers it (a still-short balance is read,
 * not drawn, so a waiting charge leaves no trail of refused transfers). The base renewal is not held up by it.
 */
@Injectable()
export class UsageCollector {
  private readonly logger = new Logger('UsageCharges');

  constructor(
    private readonly charges: UsageChargesRepository,
    private readonly balances: PrepaidBalances,
  ) {}

  async collect(now: Date): Promise<CollectResult> {
    const result: CollectResult = { paid: 0, unpaid: 0 };
    for (const charge of await this.charges.toDraw(DRAW_LIMIT)) {
      try {
        const outcome = await this.draw(charge, now);
        if (outcome) result[outcome] += 1;
      } catch (error) {
        // one charge the core refuses otherwise must not stop the others: logged, tried again next scan
        this.logger.error(`usage charge ${usageDrawId(charge)} of merchant ${charge.merchantId} could not be drawn: ${(error as Error).message}`);
      }
    }
    return result;
  }

  private async draw(charge: UsageChargeToDraw, now: Date): Promise<'paid' | 'unpaid' | undefined> {
    const { merchantId, payer, asset, amount } = charge;
    if (charge.state === 'unpaid') {
      const { available } = await this.balances.balance(merchantId, payer, asset);
      if (available < amount) return (await this.charges.markShort(charge, amount - available, now)) ? 'unpaid' : undefined;
      if (!(await this.charges.markDrawing(charge))) return undefined;
    }
    const id = usageDrawId(charge);
    try {
      await this.balances.subscriptionUsage(merchantId, { id, payer, asset, amount });
    } catch (error) {
      if (!(error instanceof ProblemError) || error.code !== 'insufficient_balance') throw error;
      return (await this.charges.markRefused(charge, BigInt(error.extensions.topUpNeeded as string), now)) ? 'unpaid' : undefined;
    }
    return (await this.charges.markPaid(charge, prepaidTransferId('subscription-usage', id), now)) ? 'paid' : undefined;
  }
}
