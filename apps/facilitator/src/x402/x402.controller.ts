import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { FacilitatorMetrics } from '@mp/platform';
import type { SettleResponse, SupportedResponse, VerifyResponse } from '@mp/x402';
import { X402Service } from './x402.service';

/** Wire-compatible with @x402/core's HTTPFacilitatorClient: invalid payments are HTTP 200 with isValid/success false. */
@Controller()
export class X402Controller {
  constructor(
    private readonly x402: X402Service,
    private readonly metrics: FacilitatorMetrics,
  ) {}

  @Post('verify')
  @HttpCode(200)
  verify(@Body() body: unknown): Promise<VerifyResponse> {
    return this.metrics.measureVerify(body, () => this.x402.verify(body));
  }

  @Post('settle')
  @HttpCode(200)
  settle(@Body() body: unknown): Promise<SettleResponse> {
    return this.metrics.measureSettle(body, () => this.x402.settle(body));
  }

  @Get('supported')
  supported(): SupportedResponse {
    return this.x402.supported();
  }
}
