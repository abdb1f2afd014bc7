import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService } from '@mp/db';
import { PAYMENT_VIEW_COLUMNS, type PaymentViewRow, type PaymentViewState } from './payment-view';
import { MAX_RECEIVING_ADDRESSES } from './receiving-addresses';
import { pageOf } from './page-cursor';

export interface ApiKeyCandidate {
  keyId: string;
  hash: string;
  revoked: boolean;
  merchantId: string;
  merchantName: string;
  merchantDisabled: boolean;
}

export interface ReceivingAddressRow {
  network: string;
  /** lowercase */
  address: string;
  createdAt: Date;
}

export interface PaymentPage {
  rows: PaymentViewRow[];
  /** the (createdAt, id) of the last row when more rows follow */
  next?: { createdAt: Date; id: string };
}

/** What the operator API shows of an API key: never its hash. */
const API_KEY_RECORD = { id: true, prefix: true, name: true, createdAt: true, lastUsedAt: true, revokedAt: true } satisfies Prisma.ApiKeySelect;

/** What the operator API shows of a merchant: never its webhook secret or key hashes. */
const MERCHANT_RECORD = {
  id: true,
  name: true,
  webhookUrl: true,
  allowAnyPayTo: true,
  createdAt: true,
  disabledAt: true,
  receivingAddresses: { select: { network: true, address: true, createdAt: true }, orderBy: [{ network: 'asc' }, { address: 'asc' }] },
  apiKeys: { select: API_KEY_RECORD, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
} satisfies Prisma.MerchantSelect;

export type ApiKeyRecord = Prisma.ApiKeyGetPayload<{ select: typeof API_KEY_RECORD }>;
export type MerchantRecord = Prisma.MerchantGetPayload<{ select: typeof MERCHANT_RECORD }>;

/** A merchant as the operator creates it (scripts/merchants.mjs `create`): its first key comes with it. */
export interface NewMerchant {
  name: string;
  webhookUrl: string | null;
  webhookSecret: string;
  allowAnyPayTo: boolean;
  /** lowercase addresses */
  receivingAddresses: { network: string; address: string }[];
  key: { prefix: string; hash: string; name: string | null };
}

/** Merchants, their API keys, receiving addresses and payments, always read with the merchant's id in the WHERE clause. */
@Injectable()
export class MerchantRepository {
  constructor(private readonly db: PrismaService) {}

  /** Every key with this prefix (almost always one), with its merchant. */
  keysByPrefix(prefix: string): Promise<ApiKeyCandidate[]> {
    return this.db.$queryRawUnsafe<ApiKeyCandidate[]>(
      `SELECT k.id AS "keyId", k.hash, k.revoked_at IS NOT NULL AS revoked,
              m.id AS "merchantId", m.name AS "merchantName", m.disabled_at IS NOT NULL AS "merchantDisabled"
         FROM facilitator.api_keys k JOIN facilitator.merchants m ON m.id = k.merchant_id
        WHERE k.prefix = $1`,
      prefix,
    );
  }

  async touchKey(keyId: string): Promise<void> {
    await this.db.$executeRawUnsafe(`UPDATE facilitator.api_keys SET last_used_at = now() WHERE id = $1::uuid`, keyId);
  }

  async payment(merchantId: string, id: string): Promise<PaymentViewRow | undefined> {
    const rows = await this.db.$queryRawUnsafe<PaymentViewRow[]>(
      `SELECT ${PAYMENT_VIEW_COLUMNS} FROM facilitator.payments p WHERE p.id = $1::uuid AND p.merchant_id = $2::uuid`,
      id,
      merchantId,
    );
    return rows[0];
  }

  /** The merchant's payments, newest first, after the cursor (exclusive). */
  async payments(merchantId: string, options: { limit: number; state?: PaymentViewState; before?: { createdAt: Date; id: string } }): Promise<PaymentPage> {
    const params: unknown[] = [merchantId, options.limit + 1];
    let where = 'p.merchant_id = $1::uuid';
    if (options.state) {
      params.push(options.state);
      where += ` AND p.state::text = $${params.length}`;
    }
    if (options.before) {
      params.push(options.before.createdAt, options.before.id);
      where += ` AND (p.created_at, p.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`;
    }
    const rows = await this.db.$queryRawUnsafe<PaymentViewRow[]>(
      `SELECT ${PAYMENT_VIEW_COLUMNS} FROM facilitator.payments p WHERE ${where} ORDER BY p.created_at DESC, p.id DESC LIMIT $2`,
      ...params,
    );
    return pageOf(rows, options.limit);
  }

  /** Whether the merchant may settle to `address` (lowercase) on `network`: it allows any, or declared this one. */
  async mayPayTo(merchantId: string, network: string, address: string): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ allowed: boolean }[]>(
      `SELECT m.allow_any_pay_to OR EXISTS (
                SELECT 1 FROM facilitator.merchant_receiving_addresses r
                 WHERE r.merchant_id = m.id AND r.network = $2 AND r.address = $3) AS allowed
         FROM facilitator.merchants m WHERE m.id = $1::uuid`,
      merchantId,
      network,
      address,
    );
    return rows[0]?.allowed === true;
  }

  async receivingAddresses(merchantId: string): Promise<ReceivingAddressRow[]> {
    return this.db.$queryRawUnsafe<ReceivingAddressRow[]>(
      `SELECT network, address, created_at AS "createdAt" FROM facilitator.merchant_receiving_addresses
        WHERE merchant_id = $1::uuid ORDER BY network, address`,
      merchantId,
    );
  }

  /**
   * Declares an address (lowercase). 'created' or 'exists' (declaring twice is harmless); 'full' when the merchant
   * already has MAX_RECEIVING_ADDRESSES.
   */
  async declareReceivingAddress(merchantId: string, network: string, address: string): Promise<{ outcome: 'created' | 'exists' | 'full'; row?: ReceivingAddressRow }> {
    const inserted = await this.db.$queryRawUnsafe<ReceivingAddressRow[]>(
      `INSERT INTO facilitator.merchant_receiving_addresses (merchant_id, network, address)
       SELECT $1::uuid, $2, $3
        WHERE (SELECT count(*) FROM facilitator.merchant_receiving_addresses WHERE merchant_id = $1::uuid) < $4
       ON CONFLICT DO NOTHING
       RETURNING network, address, created_at AS "createdAt"`,
      merchantId,
      network,
      address,
      MAX_RECEIVING_ADDRESSES,
    );
    if (inserted.length) return { outcome: 'created', row: inserted[0] };
    const existing = await this.db.$queryRawUnsafe<ReceivingAddressRow[]>(
      `SELECT network, address, created_at AS "createdAt" FROM facilitator.merchant_receiving_addresses
        WHERE merchant_id = $1::uuid AND network = $2 AND address = $3`,
      merchantId,
      network,
      address,
    );
    return existing.length ? { outcome: 'exists', row: existing[0] } : { outcome: 'full' };
  }

  /** False when the merchant had not declared it. */
  async removeReceivingAddress(merchantId: string, network: string, address: string): Promise<boolean> {
    const removed = await this.db.$executeRawUnsafe(
      `DELETE FROM facilitator.merchant_receiving_addresses WHERE merchant_id = $1::uuid AND network = $2 AND address = $3`,
      merchantId,
      network,
      address,
    );
    return removed > 0;
  }

  async allowAnyPayTo(merchantId: string): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ allow: boolean }[]>(`SELECT allow_any_pay_to AS allow FROM facilitator.merchants WHERE id = $1::uuid`, merchantId);
    return rows[0]?.allow === true;
  }

  async setAllowAnyPayTo(merchantId: string, allow: boolean): Promise<void> {
    await this.db.$executeRawUnsafe(`UPDATE facilitator.merchants SET allow_any_pay_to = $2 WHERE id = $1::uuid`, merchantId, allow);
  }

  // The operator API (apps/facilitator/src/admin): what scripts/merchants.mjs does in SQL.

  /** The merchant, its receiving addresses and its first API key, in one statement (all or nothing). */
  createMerchant(merchant: NewMerchant): Promise<MerchantRecord> {
    return this.db.merchant.create({
      data: {
        name: merchant.name,
        webhookUrl: merchant.webhookUrl,
        webhookSecret: merchant.webhookSecret,
        allowAnyPayTo: merchant.allowAnyPayTo,
        receivingAddresses: { create: merchant.receivingAddresses },
        apiKeys: { create: merchant.key },
      },
      select: MERCHANT_RECORD,
    });
  }

  async merchantRecord(merchantId: string): Promise<MerchantRecord | undefined> {
    return (await this.db.merchant.findUnique({ where: { id: merchantId }, select: MERCHANT_RECORD })) ?? undefined;
  }

  /** Merchants in creation order, after the cursor (exclusive); `next` when more follow. */
  async merchantPage(options: { limit: number; after?: { createdAt: Date; id: string } }): Promise<{ rows: MerchantRecord[]; next?: { createdAt: Date; id: string } }> {
    const after = options.after;
    const rows = await this.db.merchant.findMany({
      where: after ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] } : {},
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: options.limit + 1,
      select: MERCHANT_RECORD,
    });
    return pageOf(rows, options.limit);
  }

  /** Disables (keeps the first disabled_at) or enables the merchant; undefined when there is no such merchant. */
  async setMerchantDisabled(merchantId: string, disabled: boolean): Promise<MerchantRecord | undefined> {
    await this.db.merchant.updateMany({ where: { id: merchantId, ...(disabled ? { disabledAt: null } : {}) }, data: { disabledAt: disabled ? new Date() : null } });
    return this.merchantRecord(merchantId);
  }

  async createApiKey(merchantId: string, key: { prefix: string; hash: string; name: string | null }): Promise<ApiKeyRecord> {
    return this.db.apiKey.create({ data: { merchantId, ...key }, select: API_KEY_RECORD });
  }

  /** Revokes the merchant's key (keeps the first revoked_at); undefined when the merchant has no such key. */
  async revokeApiKey(merchantId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    await this.db.apiKey.updateMany({ where: { id: keyId, merchantId, revokedAt: null }, data: { revokedAt: new Date() } });
    return (await this.db.apiKey.findFirst({ where: { id: keyId, merchantId }, select: API_KEY_RECORD })) ?? undefined;
  }

  /** Replaces the secret webhooks are signed with (every later attempt uses it); false when there is no such merchant. */
  async setWebhookSecret(merchantId: string, secret: string): Promise<boolean> {
    const { count } = await this.db.merchant.updateMany({ where: { id: merchantId }, data: { webhookSecret: secret } });
    return count > 0;
  }
}
