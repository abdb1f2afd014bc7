import { Controller, Get, Header, Inject, Query, UseGuards } from '@nestjs/common';
import type { Clock } from '@mp/billing';
import { ApiDoc } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { BILLING_CLOCK } from './billing.clock';
import { entitlementAt } from './entitlements';
import { normalizePayer } from './subscription-lifecycle.service';
import { SubscriptionsRepository } from './subscriptions.repository';
import { EntitlementQuery } from './subscriptions.dto';
import { SUBSCRIPTIONS_DOCS } from './subscriptions.openapi';

/** GET /entitlements: whether a payer may be served a product, for the merchant's API key. */
@Controller('entitlements')
@UseGuards(MerchantAuthGuard)
export class EntitlementsController {
  constructor(
    private readonly subscriptions: SubscriptionsRepository,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
  ) {}

  @ApiDoc(SUBSCRIPTIONS_DOCS.entitlements)
  @Get()
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Query() query: EntitlementQuery) {
    const at = query.at === undefined ? this.clock.now() : new Date(query.at);
    const subscriptions = await this.subscriptions.ofPayerAndProduct(merchant.merchantId, normalizePayer(query.payer), query.product);
    return entitlementAt(subscriptions, at);
  }
}
