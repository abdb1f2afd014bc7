-- Subscription plans (issue 13): what a merchant sells by subscription. The merchant chooses the id, so a retried create is
-- recognized. Plans are never changed or deleted, only archived.
-- CreateTable
CREATE TABLE "ledger"."plans" (
    "merchant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "product" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "asset" TEXT NOT NULL,
    "period_unit" TEXT NOT NULL,
    "period_count" INTEGER NOT NULL,
    "trial_days" INTEGER NOT NULL DEFAULT 0,
    "ends_at" TIMESTAMPTZ(6),
    "on_dunning_exhausted" TEXT NOT NULL DEFAULT 'canceled',
    "cancel_refund" TEXT NOT NULL DEFAULT 'none',
    "archived_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "plans_pkey" PRIMARY KEY ("merchant_id","id")
);

-- CreateIndex
CREATE INDEX "plans_merchant_seq_idx" ON "ledger"."plans"("merchant_id", "seq");

-- One open plan per product and name: an archived plan's name may be used again (Prisma cannot declare a partial index).
CREATE UNIQUE INDEX "plans_open_name_key" ON "ledger"."plans"("merchant_id", "product", "name") WHERE "archived_at" IS NULL;

-- What the API checks, held by the database too (Prisma cannot declare CHECK constraints).
ALTER TABLE "ledger"."plans"
  ADD CONSTRAINT "plans_amount_positive" CHECK ("amount" > 0),
  ADD CONSTRAINT "plans_period_unit" CHECK ("period_unit" IN ('day', 'week', 'month')),
  ADD CONSTRAINT "plans_period_count_positive" CHECK ("period_count" > 0),
  ADD CONSTRAINT "plans_trial_days" CHECK ("trial_days" BETWEEN 0 AND 730),
  ADD CONSTRAINT "plans_on_dunning_exhausted" CHECK ("on_dunning_exhausted" IN ('canceled', 'unpaid')),
  ADD CONSTRAINT "plans_cancel_refund" CHECK ("cancel_refund" IN ('none', 'unused_part'));
