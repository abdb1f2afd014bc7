import { Module } from '@nestjs/common';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantDirectory } from './merchant-directory';

/** Who is calling: merchants' API keys, resolved through the facilitator. */
@Module({
  providers: [MerchantDirectory, MerchantAuthGuard],
  exports: [MerchantDirectory, MerchantAuthGuard],
})
export class MerchantAuthModule {}
