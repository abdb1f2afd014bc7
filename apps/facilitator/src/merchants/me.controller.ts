import { Body, Controller, Get, Header, Patch, UseGuards } from '@nestjs/common';
import { ApiDoc } from '@mp/platform';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';
import { MerchantRepository } from './merchant.repository';
import { UpdateMerchantSettingsDto } from './merchants.dto';
import { ME_DOCS } from './me.openapi';

/**
 * Who an API key belongs to. Other services (the ledger) resolve a merchant's key here rather than reading our
 * tables. Always requires a key, even in open mode. PATCH changes the merchant's own settings.
 */
@Controller('merchants')
@UseGuards(MerchantAuthGuard)
export class MeController {
  constructor(private readonly merchants: MerchantRepository) {}

  @ApiDoc(ME_DOCS.me)
  @Get('me')
  @Header('cache-control', 'no-store')
  me(@CurrentMerchant() merchant: MerchantPrincipal): { merchantId: string; name: string; keyId: string } {
    return { merchantId: merchant.merchantId, name: merchant.merchantName, keyId: merchant.keyId };
  }

  /** `allowAnyPayTo: true` lets settlements pay any address, not only the declared receiving addresses. */
  @ApiDoc(ME_DOCS.update, { body: UpdateMerchantSettingsDto })
  @Patch('me')
  @Header('cache-control', 'no-store')
  async update(
    @CurrentMerchant() merchant: MerchantPrincipal,
    @Body() body: UpdateMerchantSettingsDto,
  ): Promise<{ merchantId: string; allowAnyPayTo: boolean }> {
    await this.merchants.setAllowAnyPayTo(merchant.merchantId, body.allowAnyPayTo);
    return { merchantId: merchant.merchantId, allowAnyPayTo: await this.merchants.allowAnyPayTo(merchant.merchantId) };
  }
}
