import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService } from '@mp/db';

export interface ReceivedStripeEvent {
  id: string;
  type: string;
  objectId: string | null;
  created: number;
  data: unknown;
}

/** Stripe events received: redeliveries (Stripe retries, and may reorder) are recognised by the event id. */
@Injectable()
export class StripeEvents {
  constructor(private readonly db: PrismaService) {}

  async seen(id: string): Promise<boolean> {
    return (await this.db.stripeEvent.count({ where: { id } })) > 0;
  }

  /** Records a handled event; false if a concurrent delivery recorded it first. */
  async record(e: ReceivedStripeEvent): Promise<boolean> {
    const { count } = await this.db.stripeEvent.createMany({
      data: { id: e.id, type: e.type, objectId: e.objectId, data: e.data as Prisma.InputJsonValue, createdAt: new Date(e.created * 1000) },
      skipDuplicates: true,
    });
    return count === 1;
  }
}
