-- Usage-priced plan components (issue 14): a plan's components, the subscription's next period whose usage is to be
-- recorded, and one usage charge per subscription, period and component (the key makes it exactly once).
-- AlterTable
ALTER TABLE "ledger"."subscriptions" ADD COLUMN     "usage_next_index" INTEGER;

-- CreateTable
CREATE TABLE "ledger"."plan_usage_components" (
    "merchant_id" UUID NOT NULL,
    "plan_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "meter_key" TEXT NOT NULL,
    "unit_amount" DECIMAL(78,18) NOT NULL,
    "description" TEXT,
    "position" INTEGER NOT NULL,

    CONSTRAINT "plan_usage_components_pkey" PRIMARY KEY ("merchant_id","plan_id","key")
);

-- CreateTable
CREATE TABLE "ledger"."subscription_usage_charges" (
    "merchant_id" UUID NOT NULL,
    "subscription_id" TEXT NOT NULL,
    "period_index" INTEGER NOT NULL,
    "component_key" TEXT NOT NULL,
    "meter_key" TEXT NOT NULL,
    "unit_amount" DECIMAL(78,18) NOT NULL,
    "quantity" DECIMAL(140,60),
    "amount" DECIMAL(78,0) NOT NULL,
    "period_start" TIMESTAMPTZ(3) NOT NULL,
    "period_end" TIMESTAMPTZ(3) NOT NULL,
    "state" TEXT NOT NULL,
    "draw_attempt" INTEGER NOT NULL DEFAULT 0,
    "transfer_id" UUID,
    "top_up_needed" DECIMAL(78,0),
    "recorded_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "tried_at" TIMESTAMPTZ(6),
    "paid_at" TIMESTAMPTZ(6),

    CONSTRAINT "subscription_usage_charges_pkey" PRIMARY KEY ("merchant_id","subscription_id","period_index","component_key")
);

-- AddForeignKey
ALTER TABLE "ledger"."plan_usage_components" ADD CONSTRAINT "plan_usage_components_plan_fkey" FOREIGN KEY ("merchant_id", "plan_id") REFERENCES "ledger"."plans"("merchant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger"."plan_usage_components" ADD CONSTRAINT "plan_usage_components_meter_fkey" FOREIGN KEY ("merchant_id", "meter_key") REFERENCES "ledger"."usage_meters"("merchant_id", "key") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger"."subscription_usage_charges" ADD CONSTRAINT "subscription_usage_charges_subscription_fkey" FOREIGN KEY ("merchant_id", "subscription_id") REFERENCES "ledger"."subscriptions"("merchant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- What Prisma cannot declare: prices above zero, the charge states, amounts that are never negative (too_large: the
-- aggregate or its price is beyond what the columns hold, recorded with amount 0 and no quantity, never drawn)
ALTER TABLE "ledger"."plan_usage_components"
  ADD CONSTRAINT "plan_usage_components_unit_amount_check" CHECK ("unit_amount" > 0);

ALTER TABLE "ledger"."subscription_usage_charges"
  ADD CONSTRAINT "subscription_usage_charges_state_check" CHECK ("state" IN ('due', 'paid', 'unpaid', 'nothing_due', 'too_large')),
  ADD CONSTRAINT "subscription_usage_charges_amount_check" CHECK ("amount" >= 0 AND ("state" IN ('nothing_due', 'too_large')) = ("amount" = 0)),
  ADD CONSTRAINT "subscription_usage_charges_quantity_check" CHECK (("state" = 'too_large') = ("quantity" IS NULL)),
  ADD CONSTRAINT "subscription_usage_charges_paid_check" CHECK (("state" = 'paid') = ("transfer_id" IS NOT NULL)),
  ADD CONSTRAINT "subscription_usage_charges_window_check" CHECK ("period_start" < "period_end");

-- The charges the scan still has to draw: never tried first, then the least recently tried
CREATE INDEX "subscription_usage_charges_to_draw_idx" ON "ledger"."subscription_usage_charges"("tried_at" NULLS FIRST, "recorded_at") WHERE "state" IN ('due', 'unpaid');
