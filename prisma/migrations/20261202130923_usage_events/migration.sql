-- Usage events and meters (issue 14): events deduplicated by their primary key (merchant, source, id), claimed
-- by the insert itself, and meters that total them.
-- CreateTable
CREATE TABLE "ledger"."usage_events" (
    "merchant_id" UUID NOT NULL,
    "source" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "time" TIMESTAMPTZ(3) NOT NULL,
    "data" JSONB,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_events_pkey" PRIMARY KEY ("merchant_id","source","event_id")
);

-- CreateTable
CREATE TABLE "ledger"."usage_meters" (
    "merchant_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "aggregation" TEXT NOT NULL,
    "value_property" TEXT,
    "group_by" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_meters_pkey" PRIMARY KEY ("merchant_id","key")
);

-- CreateIndex
CREATE INDEX "usage_events_meter_idx" ON "ledger"."usage_events"("merchant_id", "type", "subject", "time");

-- What a meter is (Prisma cannot declare CHECK constraints): one of the seven aggregations, and a value path
-- exactly when the aggregation reads values (count counts events)
ALTER TABLE "ledger"."usage_meters"
  ADD CONSTRAINT "usage_meters_aggregation_check" CHECK ("aggregation" IN ('sum', 'count', 'min', 'max', 'avg', 'unique_count', 'latest')),
  ADD CONSTRAINT "usage_meters_value_property_check" CHECK (("aggregation" = 'count') = ("value_property" IS NULL));
