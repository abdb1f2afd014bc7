import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';

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
    const rows = await this.db.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM facilitator.stripe_events WHERE id = $1`, id);
    return rows.length > 0;
  }

  /** Records a handled event; false if a concurrent delivery recorded it first. */
  async record(e: ReceivedStripeEvent): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<unknown[]>(
      `INSERT INTO facilitator.stripe_events (id, type, object_id, data, created_at) VALUES ($1, $2, $3, $4::jsonb, to_timestamp($5))
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      e.id,
      e.type,
      e.objectId,
      JSON.stringify(e.data),
      e.created,
    );
    return rows.length === 1;
  }
}
