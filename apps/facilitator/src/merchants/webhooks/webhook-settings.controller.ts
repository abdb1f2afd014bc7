import { Body, Controller, Get, Header, Inject, Put, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../config/facilitator.config';
import { CurrentMerchant } from '../current-merchant';
import { MerchantAuthGuard } from '../merchant-auth.guard';
import type { MerchantPrincipal } from '../merchant-auth.service';
import { checkWebhookUrl } from './webhook-destination';
import { WebhookRepository } from './webhook.repository';
import { WEBHOOK_SETTINGS_DOCS } from './webhook-settings.openapi';

/** Longest webhook URL accepted (it is stored with every delivery). */
const MAX_URL_LENGTH = 2_048;

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
  @ApiDoc(WEBHOOK_SETTINGS_DOCS.set)
  @Put()
  @Header('cache-control', 'no-store')
  async set(@CurrentMerchant() merchant: MerchantPrincipal, @Body() body: unknown): Promise<WebhookSettings> {
    const fields = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    const problems = Object.keys(fields)
      .filter((k) => k !== 'webhookUrl')
      .map((name) => ({ name, reason: 'unknown field' }));
    const raw = fields.webhookUrl;
    let webhookUrl: string | null = null;
    if (raw === undefined || (raw !== null && typeof raw !== 'string')) problems.unshift({ name: 'webhookUrl', reason: 'must be an http(s) URL or null' });
    else if (typeof raw === 'string' && raw.length > MAX_URL_LENGTH) problems.unshift({ name: 'webhookUrl', reason: `must be at most ${MAX_URL_LENGTH} characters` });
    else if (typeof raw === 'string') {
      const checked = checkWebhookUrl(raw, this.config.webhooks.allowPrivate);
      if (checked.ok) webhookUrl = checked.url;
      else if (checked.code === 'webhook_url_invalid') problems.unshift({ name: 'webhookUrl', reason: checked.reason });
      else if (problems.length) problems.unshift({ name: 'webhookUrl', reason: checked.reason });
      else throw new ProblemError('webhook_destination_not_allowed', checked.reason, { invalidParams: [{ name: 'webhookUrl', reason: checked.reason }] });
    }
    if (problems.length) throw new ProblemError('validation_failed', `invalid field(s): ${problems.map((p) => p.name).join(', ')}`, { invalidParams: problems });
    await this.deliveries.setWebhookUrl(merchant.merchantId, webhookUrl);
    return { merchantId: merchant.merchantId, webhookUrl };
  }
}
