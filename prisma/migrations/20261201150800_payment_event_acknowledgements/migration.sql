-- The ledger acknowledges every payment event it has booked (queue payment-events-acks). An event published but not
-- acknowledged after OUTBOX_REPUBLISH_AFTER_MS is published again, and published_at then says when it was last published.
ALTER TABLE "facilitator"."payment_events" ADD COLUMN "acknowledged_at" TIMESTAMPTZ(3),
ADD COLUMN "republish_count" INTEGER NOT NULL DEFAULT 0;

-- What the relay may have to publish again: only the events in flight, oldest publication first.
CREATE INDEX "payment_events_unacknowledged_idx" ON "facilitator"."payment_events"("published_at", "id") WHERE "acknowledged_at" IS NULL AND "published_at" IS NOT NULL;
