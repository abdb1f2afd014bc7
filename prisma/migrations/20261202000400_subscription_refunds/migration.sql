-- The refund of an immediate cancel is executed now (issue 13 item 4): the ledger asks the facilitator for it
-- (refund_requested) and records its outcome (refunded, or refund_failed when the rail did not move the money).
ALTER TABLE "ledger"."subscriptions"
  DROP CONSTRAINT "subscriptions_refund_state",
  ADD CONSTRAINT "subscriptions_refund_state" CHECK ("refund_state" IS NULL OR "refund_state" IN ('refund_due', 'refund_requested', 'refunded', 'refund_failed'));

-- The sweep publishes again the refunds asked for that have no outcome yet.
CREATE INDEX "subscriptions_refund_requested_idx" ON "ledger"."subscriptions"("cancel_requested_at") WHERE "refund_state" = 'refund_requested';
