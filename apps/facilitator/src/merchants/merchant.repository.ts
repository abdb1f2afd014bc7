import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { PAYMENT_VIEW_COLUMNS, type PaymentViewRow, type PaymentViewState } from './payment-view';

export interface ApiKeyCandidate {
  keyId: string;
  hash: string;
  revoked: boolean;
  merchantId: string;
  merchantName: string;
  merchantDisabled: boolean;
}

export interface PaymentPage {
  rows: PaymentViewRow[];
  /** the (createdAt, id) of the last row when more rows follow */
  next?: { createdAt: Date; id: string };
}

/** Merchants, their API keys, and their payments, always read with the merchant's id in the WHERE clause. */
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
    if (rows.length <= options.limit) return { rows };
    const page = rows.slice(0, options.limit);
    const last = page[page.length - 1];
    return { rows: page, next: { createdAt: last.createdAt, id: last.id } };
  }
}
