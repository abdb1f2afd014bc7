import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { getAddress } from 'viem';
import { ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { generateApiKey } from '../merchants/api-key';
import { MerchantRepository, type ApiKeyRecord, type MerchantRecord, type ReceivingAddressRow } from '../merchants/merchant.repository';
import { MAX_RECEIVING_ADDRESSES } from '../merchants/receiving-addresses';
import { MppSecrets } from '../mpp/mpp-secrets';
import { decodePageCursor, encodePageCursor } from '../merchants/page-cursor';
import { checkWebhookUrl } from '../merchants/webhooks/webhook-destination';
import { WebhookRepository } from '../merchants/webhooks/webhook.repository';
import type { PageQuery } from '../merchants/merchants.dto';
import type { CreateMerchantDto, DeliveriesQuery } from './admin.dto';
import { WebhookDeliveriesRepository, type WebhookDeliveryRecord } from './webhook-deliveries.repository';

export interface AdminApiKey {
  keyId: string;
  /** the 8 characters after `mpk_`: names the key in listings (the key itself is shown once, when it is made) */
  prefix: string;
  name: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface AdminMerchant {
  merchantId: string;
  name: string;
  webhookUrl: string | null;
  allowAnyPayTo: boolean;
  receivingAddresses: { network: string; address: string; createdAt: string }[];
  apiKeys: AdminApiKey[];
  createdAt: string;
  /** null: active */
  disabledAt: string | null;
}

/** A key as it is made: the only time `apiKey` is shown. */
export interface CreatedApiKey extends AdminApiKey {
  merchantId: string;
  apiKey: string;
}

/** A merchant as it is made: the only time its first key and its webhook secret are shown. */
export interface CreatedMerchant {
  merchant: AdminMerchant;
  apiKey: CreatedApiKey;
  webhookSecret: string;
}

export interface AdminWebhookDelivery {
  deliveryId: string;
  eventType: string;
  /** the payment event it reports (payment events), or null */
  eventId: string | null;
  /** the notice it carries (merchant notices), or null */
  noticeId: string | null;
  url: string;
  status: 'pending' | 'delivered' | 'failed';
  /** attempts made so far */
  attempt: number;
  responseStatus: number | null;
  error: string | null;
  /** when the next attempt is due (pending only) */
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface AdminReceivingAddress {
  network: string;
  /** EIP-55 checksummed */
  address: string;
  createdAt: string;
}

export interface Page<T> {
  data: T[];
  /** pass as `cursor` for the next page; null on the last page */
  nextCursor: string | null;
}

const DEFAULT_PAGE_SIZE = 50;
const CURSOR_REASON = 'must be the nextCursor of a previous page';

/**
 * What the operator does to merchants, through the same repositories the merchant API uses, with the semantics of
 * scripts/merchants.mjs: keys `mpk_<prefix>_<secret>` stored as their sha256, webhook secrets `whsec_` + base64 of 32
 * random bytes (Standard Webhooks), receiving addresses stored lowercase, webhook URLs checked as PUT /merchants/me/webhook does.
 */
@Injectable()
export class AdminService {
  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly merchants: MerchantRepository,
    private readonly webhooks: WebhookRepository,
    private readonly deliveryLog: WebhookDeliveriesRepository,
    private readonly mppSecrets: MppSecrets,
  ) {}

  async createMerchant(dto: CreateMerchantDto): Promise<CreatedMerchant> {
    const webhookUrl = dto.webhookUrl == null ? null : this.checkedWebhookUrl(dto.webhookUrl);
    const seen = new Set<string>();
    const receivingAddresses = (dto.receivingAddresses ?? [])
      .map((a) => ({ network: a.network, address: a.address.toLowerCase() }))
      .filter((a) => !seen.has(`${a.network}:${a.address}`) && seen.add(`${a.network}:${a.address}`));
    const { key, prefix, hash } = generateApiKey();
    const webhookSecret = newWebhookSecret();
    const record = await this.merchants.createMerchant({
      name: dto.name,
      webhookUrl,
      webhookSecret,
      allowAnyPayTo: dto.allowAnyPayTo ?? false,
      receivingAddresses,
      key: { prefix, hash, name: dto.keyName ?? 'default' },
    });
    const merchant = merchantView(record);
    return { merchant, apiKey: { ...merchant.apiKeys[0], merchantId: merchant.merchantId, apiKey: key }, webhookSecret };
  }

  async listMerchants(query: PageQuery): Promise<Page<AdminMerchant>> {
    const page = await this.merchants.merchantPage({
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      after: query.cursor === undefined ? undefined : decodePageCursor(query.cursor, CURSOR_REASON),
    });
    return { data: page.rows.map(merchantView), nextCursor: page.next ? encodePageCursor(page.next) : null };
  }

  async merchant(merchantId: string): Promise<AdminMerchant> {
    return merchantView(await this.existing(merchantId));
  }

  /** Its keys stop working and no more webhooks are sent, on every replica within API_KEY_CACHE_MS. */
  async setDisabled(merchantId: string, disabled: boolean): Promise<AdminMerchant> {
    const record = await this.merchants.setMerchantDisabled(merchantId.toLowerCase(), disabled);
    if (!record) throw noMerchant(merchantId);
    return merchantView(record);
  }

  async setAllowAnyPayTo(merchantId: string, allow: boolean): Promise<AdminMerchant> {
    const merchant = await this.existing(merchantId);
    await this.merchants.setAllowAnyPayTo(merchant.id, allow);
    return this.merchant(merchant.id);
  }

  /** `created: false` when the merchant had already declared it (harmless). */
  async declareReceivingAddress(merchantId: string, network: string, address: string): Promise<{ created: boolean; address: AdminReceivingAddress }> {
    const merchant = await this.existing(merchantId);
    const declared = await this.merchants.declareReceivingAddress(merchant.id, network, address.toLowerCase());
    if (declared.outcome === 'full') {
      const reason = `a merchant declares at most ${MAX_RECEIVING_ADDRESSES} receiving addresses; remove one first`;
      throw new ProblemError('validation_failed', 'invalid field(s): address', { invalidParams: [{ name: 'address', reason }] });
    }
    return { created: declared.outcome === 'created', address: receivingAddressView(declared.row!) };
  }

  async removeReceivingAddress(merchantId: string, network: string, address: string): Promise<void> {
    const merchant = await this.existing(merchantId);
    if (!(await this.merchants.removeReceivingAddress(merchant.id, network, address.toLowerCase()))) {
      throw new ProblemError('not_found', `merchant ${merchant.id} has no receiving address ${address} on ${network}`);
    }
  }

  /** Challenges issued under the previous secret stay payable for an hour (the longest a challenge lives). */
  async rotateMppSecret(merchantId: string): Promise<{ merchantId: string; rotatedAt: string }> {
    const merchant = await this.existing(merchantId);
    return { merchantId: merchant.id, rotatedAt: (await this.mppSecrets.rotate(merchant.id)).toISOString() };
  }

  async createApiKey(merchantId: string, name: string | undefined): Promise<CreatedApiKey> {
    const merchant = await this.existing(merchantId);
    if (merchant.disabledAt) throw new ProblemError('merchant_disabled', `merchant ${merchant.id} is disabled; enable it first`);
    const { key, prefix, hash } = generateApiKey();
    const record = await this.merchants.createApiKey(merchant.id, { prefix, hash, name: name ?? null });
    return { ...apiKeyView(record), merchantId: merchant.id, apiKey: key };
  }

  /** Refused on every replica within API_KEY_CACHE_MS. Revoking twice keeps the first time. */
  async revokeApiKey(merchantId: string, keyId: string): Promise<AdminApiKey> {
    const record = await this.merchants.revokeApiKey(merchantId.toLowerCase(), keyId.toLowerCase());
    if (!record) throw new ProblemError('not_found', `merchant ${merchantId} has no API key ${keyId}`);
    return apiKeyView(record);
  }

  async setWebhookUrl(merchantId: string, raw: string | null): Promise<{ merchantId: string; webhookUrl: string | null }> {
    const webhookUrl = raw === null ? null : this.checkedWebhookUrl(raw);
    const merchant = await this.existing(merchantId);
    await this.webhooks.setWebhookUrl(merchant.id, webhookUrl);
    return { merchantId: merchant.id, webhookUrl };
  }

  /** Every attempt from now on, retries of queued deliveries included, is signed with the new secret only. */
  async rotateWebhookSecret(merchantId: string): Promise<{ merchantId: string; webhookSecret: string }> {
    const webhookSecret = newWebhookSecret();
    if (!(await this.merchants.setWebhookSecret(merchantId.toLowerCase(), webhookSecret))) throw noMerchant(merchantId);
    return { merchantId: merchantId.toLowerCase(), webhookSecret };
  }

  async deliveries(merchantId: string, query: DeliveriesQuery): Promise<Page<AdminWebhookDelivery>> {
    const merchant = await this.existing(merchantId);
    const page = await this.deliveryLog.deliveryPage(merchant.id, {
      limit: query.limit ?? DEFAULT_PAGE_SIZE,
      status: query.status,
      before: query.cursor === undefined ? undefined : decodePageCursor(query.cursor, CURSOR_REASON),
    });
    return { data: page.rows.map(deliveryView), nextCursor: page.next ? encodePageCursor(page.next) : null };
  }

  /** The same body under the same Webhook-Id, to the merchant's current webhook URL, as soon as a worker takes it. */
  async resend(merchantId: string, deliveryId: string): Promise<AdminWebhookDelivery> {
    const merchant = await this.existing(merchantId);
    if (merchant.disabledAt) throw new ProblemError('merchant_disabled', `merchant ${merchant.id} is disabled: no webhooks are sent to it`);
    if (!merchant.webhookUrl) throw new ProblemError('webhook_not_configured', `merchant ${merchant.id} has no webhook URL; set one first`);
    const record = await this.deliveryLog.resend(merchant.id, deliveryId.toLowerCase(), merchant.webhookUrl);
    if (!record) throw new ProblemError('not_found', `merchant ${merchant.id} has no webhook delivery ${deliveryId}`);
    return deliveryView(record);
  }

  private async existing(merchantId: string): Promise<MerchantRecord> {
    const record = await this.merchants.merchantRecord(merchantId.toLowerCase());
    if (!record) throw noMerchant(merchantId);
    return record;
  }

  /** The registration check of PUT /merchants/me/webhook, with the same problems. */
  private checkedWebhookUrl(raw: string): string {
    const checked = checkWebhookUrl(raw, this.config.webhooks.allowPrivate);
    if (checked.ok) return checked.url;
    const invalidParams = [{ name: 'webhookUrl', reason: checked.reason }];
    if (checked.code === 'webhook_url_invalid') throw new ProblemError('validation_failed', 'invalid field(s): webhookUrl', { invalidParams });
    throw new ProblemError('webhook_destination_not_allowed', checked.reason, { invalidParams });
  }
}

/** Standard Webhooks: `whsec_` + base64 of the 32-byte HMAC key (as scripts/merchants.mjs makes it). */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function noMerchant(merchantId: string): ProblemError {
  return new ProblemError('not_found', `no merchant ${merchantId}`);
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

function apiKeyView(key: ApiKeyRecord): AdminApiKey {
  return {
    keyId: key.id,
    prefix: key.prefix,
    name: key.name,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: iso(key.lastUsedAt),
    revokedAt: iso(key.revokedAt),
  };
}

function receivingAddressView(a: ReceivingAddressRow): AdminReceivingAddress {
  return { network: a.network, address: getAddress(a.address), createdAt: a.createdAt.toISOString() };
}

function merchantView(m: MerchantRecord): AdminMerchant {
  return {
    merchantId: m.id,
    name: m.name,
    webhookUrl: m.webhookUrl,
    allowAnyPayTo: m.allowAnyPayTo,
    receivingAddresses: m.receivingAddresses.map(receivingAddressView),
    apiKeys: m.apiKeys.map(apiKeyView),
    createdAt: m.createdAt.toISOString(),
    disabledAt: iso(m.disabledAt),
  };
}

function deliveryView(d: WebhookDeliveryRecord): AdminWebhookDelivery {
  return {
    deliveryId: d.id,
    eventType: d.eventType,
    eventId: d.eventId === null ? null : d.eventId.toString(),
    noticeId: d.noticeId,
    url: d.url,
    status: d.status,
    attempt: d.attempt,
    responseStatus: d.responseStatus,
    error: d.error,
    nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
    createdAt: d.createdAt.toISOString(),
    deliveredAt: iso(d.deliveredAt),
  };
}
