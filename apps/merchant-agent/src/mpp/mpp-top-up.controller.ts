import { Controller, HttpCode, Inject, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc, ProblemError } from '@mp/platform';
import { MERCHANT_CONFIG, type MerchantConfig } from '../merchant.config';
import { PrepaidLedger, PrepaidLedgerError } from '../prepaid/prepaid-ledger';
import { MPP_PAID_LOCAL, type MppPaid } from './mpp-paywall';
import { MPP_TOP_UP_DOCS } from './mpp-top-up.openapi';

/**
 * A prepaid balance topped up with MPP (the x402 way is the A2A `top-up` skill). Reaching this handler means the MPP
 * paywall has settled the payment; the ledger credits it once per payment, so the same credential sent again (after a
 * lost answer, or a 503 here) is credited once and answered with the balance.
 */
@Controller('mpp/balance')
export class MppTopUpController {
  private readonly ledger: PrepaidLedger;

  constructor(@Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig) {
    this.ledger = new PrepaidLedger(config.prepaid!, config.facilitatorTimeoutMs);
  }

  @ApiDoc(MPP_TOP_UP_DOCS.topUp)
  @Post('top-up')
  @HttpCode(200)
  async topUp(@Res({ passthrough: true }) res: Response) {
    const paid = res.locals[MPP_PAID_LOCAL] as MppPaid | undefined;
    if (!paid) throw new Error('POST /mpp/balance/top-up reached without the MPP paywall');
    const payer = paid.payer;
    if (!payer) throw new Error(`the facilitator named no payer for payment ${paid.reference}`);
    try {
      const balance = await this.ledger.topUp(payer, this.config.prepaid!.topUpAmount, paid.reference);
      return { credited: this.config.prepaid!.topUpAmount, paymentReference: paid.reference, balance };
    } catch (error) {
      if (!(error instanceof PrepaidLedgerError)) throw error;
      throw new ProblemError(
        'upstream_unavailable',
        `paid (${paid.reference}, receipt in Payment-Receipt) but not credited yet: ${error.message}. Send the same request with the same credential again: it is credited once, never charged twice`,
        { paymentReference: paid.reference },
      );
    }
  }
}
