import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';

/**
 * Who an API key belongs to. Other services (the ledger) resolve a merchant's key here rather than reading our
 * tables. Always requires a key, even in open mode.
 */
@Controller('merchants')
@UseGuards(MerchantAuthGuard)
export class MeController {
  @Get('me')
  @Header('cache-control', 'no-store')
  me(@CurrentMerchant() merchant: MerchantPrincipal): { merchantId: string; name: string; keyId: string } {
    return { merchantId: merchant.merchantId, name: merchant.merchantName, keyId: merchant.keyId };
  }
}
