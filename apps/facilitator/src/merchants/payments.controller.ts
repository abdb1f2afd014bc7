import { Controller, Get, Header, Param, Query, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';
import { MerchantRepository } from './merchant.repository';
import { PaymentPath, PaymentsQuery } from './merchants.dto';
import { decodePageCursor, encodePageCursor } from './page-cursor';
import { toPaymentView, type PaymentView } from './payment-view';
import { PAYMENTS_DOCS } from './payments.openapi';

const CURSOR_REASON = 'is not a cursor this API returned';

export interface PaymentList {
  data: PaymentView[];
  /** pass as `cursor` for the next (older) page; null on the last page */
  nextCursor: string | null;
}

/**
 * A merchant's own payments, and nothing else: every query carries the merchant's id, so another merchant's
 * payment is indistinguishable from one that does not exist (404). Always requires an API key, even in open mode.
 */
@Controller('payments')
@UseGuards(MerchantAuthGuard)
export class PaymentsController {
  constructor(private readonly merchants: MerchantRepository) {}

  @ApiDoc(PAYMENTS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: MerchantPrincipal, @Query() query: PaymentsQuery): Promise<PaymentList> {
    const { limit = 50, cursor, state } = query;
    const page = await this.merchants.payments(merchant.merchantId, {
      limit,
      state,
      before: cursor === undefined ? undefined : decodePageCursor(cursor, CURSOR_REASON),
    });
    return { data: page.rows.map(toPaymentView), nextCursor: page.next ? encodePageCursor(page.next) : null };
  }

  @ApiDoc(PAYMENTS_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: MerchantPrincipal, @Param() { id }: PaymentPath): Promise<PaymentView> {
    const row = await this.merchants.payment(merchant.merchantId, id.toLowerCase());
    if (!row) throw new ProblemError('not_found', `no payment ${id}`);
    return toPaymentView(row);
  }
}
