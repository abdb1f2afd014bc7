import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService, withTransaction } from '@mp/db';
import { pageOf } from '../merchants/page-cursor';

/** What the operator API shows of a delivery: not its body. */
const DELIVERY_RECORD = {
  id: true,
  eventType: true,
  eventId: true,
  noticeId: true,
  url: true,
  status: true,
  attempt: true,
  responseStatus: true,
  error: true,
  nextAttemptAt: true,
  createdAt: true,
  deliveredAt: true,
} satisfies Prisma.WebhookDeliverySelect;

export type WebhookDeliveryRecord = Prisma.WebhookDeliveryGetPayload<{ select: typeof DELIVERY_RECORD }>;

/**
 * The operator's side of the webhook deliveries that WebhookRepository creates and the dispatcher sends: reading a
 * merchant's deliveries and putting one back in line. Always with the merchant's id in the WHERE clause.
 */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly db: PrismaService) {}

  /** The merchant's deliveries, newest first, after the cursor (exclusive); `next` when more follow. */
  async deliveryPage(
    merchantId: string,
    options: { limit: number; status?: WebhookDeliveryRecord['status']; before?: { createdAt: Date; id: string } },
  ): Promise<{ rows: WebhookDeliveryRecord[]; next?: { createdAt: Date; id: string } }> {
    const before = options.before;
    const rows = await this.db.webhookDelivery.findMany({
      where: {
        merchantId,
        ...(options.status && { status: options.status }),
        ...(before && { OR: [{ createdAt: { lt: before.createdAt } }, { createdAt: before.createdAt, id: { lt: before.id } }] }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: options.limit + 1,
      select: DELIVERY_RECORD,
    });
    return pageOf(rows, options.limit);
  }

  /**
   * Puts the merchant's delivery back in line for the dispatcher, due now, to `url`: the same id and body, a new
   * attempt (counted and logged like any other). A delivery that already used up WEBHOOK_MAX_ATTEMPTS gets this one
   * attempt only. Undefined when the merchant has no such delivery.
   */
  async resend(merchantId: string, deliveryId: string, url: string): Promise<WebhookDeliveryRecord | undefined> {
    // Read in the transaction that holds the row: the dispatcher's claim skips locked rows, so the answer is the row as
    // this resend left it, never a later attempt the dispatcher made in between.
    return withTransaction(this.db, async (tx) => {
      const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
        // the database's clock, which the dispatcher's claim compares next_attempt_at with
        `UPDATE facilitator.webhook_deliveries SET status = 'pending', next_attempt_at = now(), delivered_at = NULL, url = $3
          WHERE id = $1::uuid AND merchant_id = $2::uuid RETURNING id::text`,
        deliveryId,
        merchantId,
        url,
      );
      if (!rows.length) return undefined;
      return (await tx.webhookDelivery.findUnique({ where: { id: deliveryId }, select: DELIVERY_RECORD })) ?? undefined;
    });
  }
}
