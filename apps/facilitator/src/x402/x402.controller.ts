import { Body, Controller, Get, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiDoc, FacilitatorMetrics } from '@mp/platform';
import type { SettleResponse, SupportedResponse, VerifyResponse } from '@mp/x402';
import { CurrentMerchant, OpenModeAllowed } from '../merchants/current-merchant';
import { MerchantAuthGuard } from '../merchants/merchant-auth.guard';
import type { MerchantPrincipal } from '../merchants/merchant-auth.service';
import { X402Service } from './x402.service';
import { X402_DOCS } from './x402.openapi';

/**
 * Wire-compatible with @x402/core's HTTPFacilitatorClient: invalid payments are HTTP 200 with isValid/success false.
 * /verify and /settle need a merchant API key (unless FACILITATOR_OPEN_MODE); /supported is public.
 */
@Controller()
export class X402Controller {
  constructor(
    private readonly x402: X402Service,
    private readonly metrics: FacilitatorMetrics,
  ) {}

  @ApiDoc(X402_DOCS.verify)
  @Post('verify')
  @HttpCode(200)
  @UseGuards(MerchantAuthGuard)
  @OpenModeAllowed()
  verify(@Body() body: unknown, @CurrentMerchant() merchant: MerchantPrincipal | undefined): Promise<VerifyResponse> {
    return this.metrics.measureVerify(body, () => this.x402.verify(body, merchant?.merchantId ?? null));
  }

  @ApiDoc(X402_DOCS.settle)
  @Post('settle')
  @HttpCode(200)
  @UseGuards(MerchantAuthGuard)
  @OpenModeAllowed()
  settle(@Body() body: unknown, @CurrentMerchant() merchant: MerchantPrincipal | undefined): Promise<SettleResponse> {
    return this.metrics.measureSettle(body, () => this.x402.settle(body, merchant?.merchantId ?? null));
  }

  @ApiDoc(X402_DOCS.supported)
  @Get('supported')
  supported(): SupportedResponse {
    return this.x402.supported();
  }
}
