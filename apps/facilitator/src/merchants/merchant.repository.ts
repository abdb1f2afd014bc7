import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService, withTransaction } from '@mp/db';
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

const RECEIVING_ADDRESS = { network: true, address: true, createdAt: true } satisfies Prisma.MerchantReceivingAddressSelect;

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
  receivingAddresses: { select: RECEIVING_ADDRESS, orderBy: [{ network: 'asc' }, { address: 'asc' }] },
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
  async keysByPrefix(prefix: string): Promise<ApiKeyCandidate[]> {
    const keys = await this.db.apiKey.findMany({
      where: { prefix },
      select: { id: true, hash: true, revokedAt: true, merchant: { select: { id: true, name: true, disabledAt: true } } },
    });
    return keys.map((k) => ({
      keyId: k.id,
      hash: k.hash,
      revoked: k.revokedAt !== null,
      merchantId: k.merchant.id,
      merchantName: k.merchant.name,
      merchantDisabled: k.merchant.disabledAt !== null,
    }));
  }

  async touchKey(keyId: string): Promise<void> {
    await this.db.apiKey.updateMany({ where: { id: keyId }, data: { lastUsedAt: new Date() } });
  }

  // Payments are read with PAYMENT_VIEW_COLUMNS, the one SQL definition of the payment snapshot that the outbox relay
  // and the webhook scan (row locks with SKIP LOCKED, xid8 cursors: statements Prisma Client cannot express) read too.
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
    const allowed = await this.db.merchant.count({
      where: { id: merchantId, OR: [{ allowAnyPayTo: true }, { receivingAddresses: { some: { network, address } } }] },
    });
    return allowed > 0;
  }

  receivingAddresses(merchantId: string): Promise<ReceivingAddressRow[]> {
    return this.db.merchantReceivingAddress.findMany({ where: { merchantId }, orderBy: [{ network: 'asc' }, { address: 'asc' }], select: RECEIVING_ADDRESS });
  }

  /**
   * Declares an address (lowercase). 'created' or 'exists' (declaring twice is harmless); 'full' when the merchant
   * already has MAX_RECEIVING_ADDRESSES.
   */
  declareReceivingAddress(
    merchantId: string,
    network: string,
    address: string,
  ): Promise<{ outcome: 'created' | 'exists' | 'full'; row?: ReceivingAddressRow }> {
    const key = { merchantId_network_address: { merchantId, network, address } };
    return withTransaction(this.db, async (tx) => {
      const existing = await tx.merchantReceivingAddress.findUnique({ where: key, select: RECEIVING_ADDRESS });
      if (existing) return { outcome: 'exists', row: existing };
      if ((await tx.merchantReceivingAddress.count({ where: { merchantId } })) >= MAX_RECEIVING_ADDRESSES) return { outcome: 'full' };
      // a concurrent declaration of the same address may win: then it exists
      const [created] = await tx.merchantReceivingAddress.createManyAndReturn({
        data: { merchantId, network, address },
        skipDuplicates: true,
        select: RECEIVING_ADDRESS,
      });
      if (created) return { outcome: 'created', row: created };
      const raced = await tx.merchantReceivingAddress.findUnique({ where: key, select: RECEIVING_ADDRESS });
      return raced ? { outcome: 'exists', row: raced } : { outcome: 'full' };
    });
  }

  /** False when the merchant had not declared it. */
  async removeReceivingAddress(merchantId: string, network: string, address: string): Promise<boolean> {
    const { count } = await this.db.merchantReceivingAddress.deleteMany({ where: { merchantId, network, address } });
    return count > 0;
  }

  async allowAnyPayTo(merchantId: string): Promise<boolean> {
    const merchant = await this.db.merchant.findUnique({ where: { id: merchantId }, select: { allowAnyPayTo: true } });
    return merchant?.allowAnyPayTo === true;
  }

  async setAllowAnyPayTo(merchantId: string, allow: boolean): Promise<void> {
    await this.db.merchant.updateMany({ where: { id: merchantId }, data: { allowAnyPayTo: allow } });
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
  async merchantPage(options: {
    limit: number;
    after?: { createdAt: Date; id: string };
  }): Promise<{ rows: MerchantRecord[]; next?: { createdAt: Date; id: string } }> {
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
    await this.db.merchant.updateMany({
      where: { id: merchantId, ...(disabled ? { disabledAt: null } : {}) },
      data: { disabledAt: disabled ? new Date() : null },
    });
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
