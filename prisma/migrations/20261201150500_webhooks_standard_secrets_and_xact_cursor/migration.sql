-- Webhook secrets in the Standard Webhooks format: whsec_ + base64 of the HMAC key. A secret made before this was
-- 64 hex characters whose ASCII bytes were the key: it becomes whsec_ + base64 of those characters, the same key,
-- so signatures made with it still verify.
UPDATE "facilitator"."merchants"
   SET "webhook_secret" = 'whsec_' || translate(encode(convert_to("webhook_secret", 'UTF8'), 'base64'), E'\n', '')
 WHERE "webhook_secret" NOT LIKE 'whsec\_%';

-- The transaction that inserted each payment event. The webhook cursor reads events in (xact_id, id) order and
-- moves only past events whose transaction ended before every transaction still open, so an event whose
-- transaction commits after a later-numbered one is never skipped. Events from before this column count as the
-- oldest (0), which keeps the cursor where it is.
ALTER TABLE "facilitator"."payment_events" ADD COLUMN "xact_id" xid8 NOT NULL DEFAULT '0';
ALTER TABLE "facilitator"."payment_events" ALTER COLUMN "xact_id" SET DEFAULT pg_current_xact_id();
CREATE INDEX "payment_events_xact_id_id_idx" ON "facilitator"."payment_events"("xact_id", "id");

ALTER TABLE "facilitator"."outbox_cursors" ADD COLUMN "last_xact_id" xid8 NOT NULL DEFAULT '0';
