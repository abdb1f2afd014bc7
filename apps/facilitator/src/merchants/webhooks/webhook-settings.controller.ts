import { Body, Controller, Get, Header, Inject, Put, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../config/facilitator.config';
import { CurrentMerchant } from '../current-merchant';
import { MerchantAuthGuard } from '../merchant-auth.guard';
import type { MerchantPrincipal } from '../merchant-auth.service';
import { SetWebhookDto } from '../merchants.dto';
import { checkWebhookUrl } from './webhook-destination';
import { WebhookRepository } from './webhook.repository';
import { WEBHOOK_SETTINGS_DOCS } from './webhook-settings.openapi';

export interface WebhookSettings {
  merchantId: string;
  /** where webhooks go; null: none are sent */
  webhookUrl: string | null;
}

/**
 * The calling merchant's webhook URL. Always requires an API key, even in open mode, and only ever touches the key's
 * own merchant. A URL on a loopback, private, link-local or metadata address is refused with
 * `webhook_destination_not_allowed` unless the operator set WEBHOOK_ALLOW_PRIVATE (the dispatcher checks the
 * resolved addresses again on every send). The signing secret is not shown here: the operator hands it over once.
 */
@Controller('merchants/me/webhook')
@UseGuards(MerchantAuthGuard)
export class WebhookSettingsController {
  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly deliveries: WebhookRepository,
  ) {}

  @ApiDoc(WEBHOOK_SETTINGS_DOCS.get)
  @Get()
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: MerchantPrincipal): Promise<WebhookSettings> {
    return { merchantId: merchant.merchantId, webhookUrl: await this.deliveries.webhookUrl(merchant.merchantId) };
  }

  /** `{ "webhookUrl": "https://…" }` sets it, `{ "webhookUrl": null }` stops webhooks. */
  @ApiDoc(WEBHOOK_SETTINGS_DOCS.set, { body: SetWebhookDto })
  @Put()
  @Header('cache-control', 'no-store')
  async set(@CurrentMerchant() merchant: MerchantPrincipal, @Body() body: SetWebhookDto): Promise<WebhookSettings> {
    let webhookUrl: string | null = null;
    if (body.webhookUrl !== null) {
      const checked = checkWebhookUrl(body.webhookUrl, this.config.webhooks.allowPrivate);
      const invalidParams = checked.ok ? [] : [{ name: 'webhookUrl', reason: checked.reason }];
      if (!checked.ok && checked.code === 'webhook_url_invalid') throw new ProblemError('validation_failed', 'invalid field(s): webhookUrl', { invalidParams });
      if (!checked.ok) throw new ProblemError('webhook_destination_not_allowed', checked.reason, { invalidParams });
      webhookUrl = checked.url;
    }
    await this.deliveries.setWebhookUrl(merchant.merchantId, webhookUrl);
    return { merchantId: merchant.merchantId, webhookUrl };
  }
}
