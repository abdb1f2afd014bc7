import { Body, Controller, Get, Header, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiDoc } from '@mp/platform';
import { CurrentMerchant } from '../merchants/current-merchant';
import { MerchantAuthGuard } from '../merchants/merchant-auth.guard';
import type { MerchantPrincipal } from '../merchants/merchant-auth.service';
import { PaymentPath } from '../merchants/merchants.dto';
import type { RefundView } from './refund-view';
import { CreateRefundDto, RefundPath } from './refunds.dto';
import { REFUNDS_DOCS } from './refunds.openapi';
import { RefundsService } from './refunds.service';

/**
 * Refunds (the x402 refund extension's request and answer), for the merchant of the API key only; a key is required
 * even in open mode. Every answer to POST /refunds is 200 with the refund: executed, pending, denied (the extension's
 * answer, not an HTTP error) or failed.
 */
@Controller()
@UseGuards(MerchantAuthGuard)
export class RefundsController {
  constructor(private readonly refunds: RefundsService) {}

  @ApiDoc(REFUNDS_DOCS.create, { body: CreateRefundDto })
  @Post('refunds')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  create(@CurrentMerchant() merchant: MerchantPrincipal, @Body() body: CreateRefundDto): Promise<RefundView> {
    return this.refunds.create(merchant.merchantId, body);
  }

  @ApiDoc(REFUNDS_DOCS.get)
  @Get('refunds/:id')
  @Header('cache-control', 'no-store')
  get(@CurrentMerchant() merchant: MerchantPrincipal, @Param() { id }: RefundPath): Promise<RefundView> {
    return this.refunds.get(merchant.merchantId, id);
  }

  @ApiDoc(REFUNDS_DOCS.ofPayment)
  @Get('payments/:id/refunds')
  @Header('cache-control', 'no-store')
  async ofPayment(@CurrentMerchant() merchant: MerchantPrincipal, @Param() { id }: PaymentPath): Promise<{ data: RefundView[] }> {
    return { data: await this.refunds.ofPayment(merchant.merchantId, id) };
  }
}
