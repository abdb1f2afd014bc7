import { Controller, Get, Header, Param, Query, UseGuards } from '@nestjs/common';
import { z } from 'zod';
import { ApiDoc, limitQuery, ProblemError } from '@mp/platform';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';
import { MerchantRepository } from './merchant.repository';
import { decodePageCursor, encodePageCursor } from './page-cursor';
import { PAYMENT_VIEW_STATES, toPaymentView, type PaymentView } from './payment-view';
import { PAYMENTS_DOCS } from './payments.openapi';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CURSOR_REASON = 'is not a cursor this API returned';

const listQuery = z.strictObject({
  limit: limitQuery(100).optional(),
  cursor: z.string().max(200).optional(),
  state: z.enum(PAYMENT_VIEW_STATES).optional(),
});

export interface PaymentList {
  data: PaymentView[];
  /** pass as `cursor` for the next (older) page; null on the last page */
  nextCursor: string | null;
}

/**
 * A merchant's own payments, and nothing else: every query carries the merchant's id, so another merchant's
 * payment is indistinguishable from one that does not exist (404). Always requires an API key, even in open mode.
 */
@Controller('payments')
@UseGuards(MerchantAuthGuard)
export class PaymentsController {
  constructor(private readonly merchants: MerchantRepository) {}

  @ApiDoc(PAYMENTS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: MerchantPrincipal, @Query() query: Record<string, unknown>): Promise<PaymentList> {
    const parsed = listQuery.safeParse(query);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({
        name: i.code === 'unrecognized_keys' ? i.keys.join(', ') : i.path.join('.'),
        reason: i.code === 'unrecognized_keys' ? 'unknown query parameter' : i.message,
      }));
      throw new ProblemError('validation_failed', `invalid query parameter(s): ${issues.map((i) => i.name).join(', ')}`, { invalidParams: issues });
    }
    const { limit = 50, cursor, state } = parsed.data;
    const page = await this.merchants.payments(merchant.merchantId, {
      limit,
      state: state as PaymentView['state'] | undefined,
      before: cursor === undefined ? undefined : decodePageCursor(cursor, CURSOR_REASON),
    });
    return { data: page.rows.map(toPaymentView), nextCursor: page.next ? encodePageCursor(page.next) : null };
  }

  @ApiDoc(PAYMENTS_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: MerchantPrincipal, @Param('id') id: string): Promise<PaymentView> {
    if (!UUID.test(id)) throw new ProblemError('validation_failed', 'invalid path parameter: id', { invalidParams: [{ name: 'id', reason: 'must be a payment id (a UUID)' }] });
    const row = await this.merchants.payment(merchant.merchantId, id.toLowerCase());
    if (!row) throw new ProblemError('not_found', `no payment ${id}`);
    return toPaymentView(row);
  }
}
