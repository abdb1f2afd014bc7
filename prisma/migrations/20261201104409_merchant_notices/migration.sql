-- AlterTable
ALTER TABLE "facilitator"."webhook_deliveries" ADD COLUMN     "notice_id" TEXT,
ALTER COLUMN "event_id" DROP NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_merchant_id_notice_id_key" ON "facilitator"."webhook_deliveries"("merchant_id", "notice_id");

-- A delivery is either a settlement event (event_id) or a merchant notice (notice_id), never both nor neither.
ALTER TABLE "facilitator"."webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_source_check"
    CHECK (("event_id" IS NULL) <> ("notice_id" IS NULL));
