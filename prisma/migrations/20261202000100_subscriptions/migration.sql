-- Subscriptions (issue 13), the ledger's half: the lifecycle of each subscription the facilitator activated, every
-- transition, and every charge the ledger asked for. The facilitator chooses the subscription id (the MPP receipt's
-- subscriptionId), unique across its merchants.
-- CreateTable
CREATE TABLE "ledger"."subscriptions" (
    "merchant_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "plan_id" UUID,
    "plan_note" TEXT,
    "product" TEXT,
    "method" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "pay_to" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "period_unit" TEXT NOT NULL,
    "period_count" INTEGER NOT NULL,
    "trial_days" INTEGER NOT NULL DEFAULT 0,
    "anchor" TIMESTAMPTZ(6) NOT NULL,
    "expires_at" TIMESTAMPTZ(6),
    "authorized_periods" INTEGER,
    "on_dunning_exhausted" TEXT NOT NULL DEFAULT 'canceled',
    "cancel_refund" TEXT NOT NULL DEFAULT 'none',
    "challenge_id" TEXT NOT NULL,
    "external_id" TEXT,
    "stripe_customer" TEXT,
    "stripe_subscription" TEXT,
    "state" TEXT NOT NULL,
    "last_paid_index" INTEGER,
    "in_flight_index" INTEGER,
    "in_flight_attempt" INTEGER,
    "in_flight_since" TIMESTAMPTZ(6),
    "failed_index" INTEGER,
    "failed_at" TIMESTAMPTZ(6),
    "next_attempt" INTEGER NOT NULL DEFAULT 0,
    "cancel_at" TEXT,
    "cancel_requested_at" TIMESTAMPTZ(6),
    "cancel_by" TEXT,
    "cancel_reason" TEXT,
    "cancel_confirmed_at" TIMESTAMPTZ(6),
    "refund_amount" DECIMAL(78,0),
    "refund_state" TEXT,
    "ended_at" TIMESTAMPTZ(6),
    "ended_reason" TEXT,
    "next_action_at" TIMESTAMPTZ(6),
    "version" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscriptions_pkey" PRIMARY KEY ("merchant_id","id")
);

-- CreateTable
CREATE TABLE "ledger"."subscription_transitions" (
    "seq" BIGSERIAL NOT NULL,
    "merchant_id" UUID NOT NULL,
    "subscription_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "from_state" TEXT NOT NULL,
    "to_state" TEXT NOT NULL,
    "at" TIMESTAMPTZ(6) NOT NULL,
    "cause" JSONB NOT NULL,
    "notice_type" TEXT,
    "notified_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_transitions_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "ledger"."subscription_charges" (
    "merchant_id" UUID NOT NULL,
    "subscription_id" TEXT NOT NULL,
    "period_index" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "command_id" TEXT,
    "payment_id" UUID,
    "state" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "period_start" TIMESTAMPTZ(6) NOT NULL,
    "period_end" TIMESTAMPTZ(6) NOT NULL,
    "requested_at" TIMESTAMPTZ(6) NOT NULL,
    "published_at" TIMESTAMPTZ(6),
    "publish_count" INTEGER NOT NULL DEFAULT 0,
    "settled_at" TIMESTAMPTZ(6),
    "outcome_reason" TEXT,
    "late_paid_at" TIMESTAMPTZ(6),

    CONSTRAINT "subscription_charges_pkey" PRIMARY KEY ("merchant_id","subscription_id","period_index","attempt")
);

-- CreateTable
CREATE TABLE "ledger"."subscription_event_receipts" (
    "payment_id" UUID NOT NULL,
    "event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "subscription_id" TEXT NOT NULL,
    "processed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_event_receipts_pkey" PRIMARY KEY ("payment_id","event_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "subscriptions_id_key" ON "ledger"."subscriptions"("id");

-- CreateIndex
CREATE INDEX "subscriptions_merchant_seq_idx" ON "ledger"."subscriptions"("merchant_id", "seq");

-- CreateIndex
CREATE INDEX "subscriptions_merchant_payer_idx" ON "ledger"."subscriptions"("merchant_id", "payer");

-- CreateIndex
CREATE UNIQUE INDEX "subscription_transitions_version_key" ON "ledger"."subscription_transitions"("merchant_id", "subscription_id", "version");

-- CreateIndex
CREATE INDEX "subscription_charges_payment_idx" ON "ledger"."subscription_charges"("payment_id");

-- AddForeignKey
ALTER TABLE "ledger"."subscription_transitions" ADD CONSTRAINT "subscription_transitions_subscription_fkey" FOREIGN KEY ("merchant_id", "subscription_id") REFERENCES "ledger"."subscriptions"("merchant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger"."subscription_charges" ADD CONSTRAINT "subscription_charges_subscription_fkey" FOREIGN KEY ("merchant_id", "subscription_id") REFERENCES "ledger"."subscriptions"("merchant_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- The scheduler's work list: only subscriptions with something due at some time (Prisma cannot declare a partial index).
CREATE INDEX "subscriptions_next_action_idx" ON "ledger"."subscriptions"("next_action_at") WHERE "next_action_at" IS NOT NULL;

-- At most one paid charge per (subscription, period): the ledger half of one charge per period.
CREATE UNIQUE INDEX "subscription_charges_one_paid_key" ON "ledger"."subscription_charges"("merchant_id", "subscription_id", "period_index") WHERE "state" = 'paid';

-- Merchant notices not handed to the facilitator yet: the scheduler's sweep sends them again.
CREATE INDEX "subscription_transitions_unnotified_idx" ON "ledger"."subscription_transitions"("seq") WHERE "notice_type" IS NOT NULL AND "notified_at" IS NULL;

-- Charges the ledger asked for whose outcome has not arrived: the scheduler publishes their command again after a while.
CREATE INDEX "subscription_charges_requested_idx" ON "ledger"."subscription_charges"("published_at") WHERE "state" = 'requested' AND "command_id" IS NOT NULL;

-- What the code checks, held by the database too (Prisma cannot declare CHECK constraints).
ALTER TABLE "ledger"."subscriptions"
  ADD CONSTRAINT "subscriptions_method" CHECK ("method" IN ('evm', 'stripe')),
  ADD CONSTRAINT "subscriptions_amount_positive" CHECK ("amount" > 0),
  ADD CONSTRAINT "subscriptions_period_unit" CHECK ("period_unit" IN ('day', 'week', 'month')),
  ADD CONSTRAINT "subscriptions_period_count_positive" CHECK ("period_count" > 0),
  ADD CONSTRAINT "subscriptions_trial_days" CHECK ("trial_days" BETWEEN 0 AND 730),
  ADD CONSTRAINT "subscriptions_authorized_periods" CHECK ("authorized_periods" IS NULL OR "authorized_periods" > 0),
  ADD CONSTRAINT "subscriptions_on_dunning_exhausted" CHECK ("on_dunning_exhausted" IN ('canceled', 'unpaid')),
  ADD CONSTRAINT "subscriptions_cancel_refund" CHECK ("cancel_refund" IN ('none', 'unused_part')),
  ADD CONSTRAINT "subscriptions_plan_note" CHECK ("plan_note" IS NULL OR "plan_note" IN ('plan_mismatch', 'plan_not_found')),
  ADD CONSTRAINT "subscriptions_state" CHECK ("state" IN ('incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid')),
  ADD CONSTRAINT "subscriptions_indexes" CHECK (("last_paid_index" IS NULL OR "last_paid_index" >= 0) AND ("failed_index" IS NULL OR "failed_index" >= 0) AND "next_attempt" >= 0),
  ADD CONSTRAINT "subscriptions_in_flight" CHECK (("in_flight_index" IS NULL) = ("in_flight_attempt" IS NULL) AND ("in_flight_index" IS NULL) = ("in_flight_since" IS NULL) AND ("in_flight_index" IS NULL OR ("in_flight_index" >= 0 AND "in_flight_attempt" >= 0))),
  ADD CONSTRAINT "subscriptions_cancel_at" CHECK ("cancel_at" IS NULL OR "cancel_at" IN ('period_end', 'immediately')),
  ADD CONSTRAINT "subscriptions_cancel" CHECK (("cancel_at" IS NULL) = ("cancel_requested_at" IS NULL) AND ("cancel_at" IS NULL) = ("cancel_by" IS NULL)),
  ADD CONSTRAINT "subscriptions_cancel_by" CHECK ("cancel_by" IS NULL OR "cancel_by" IN ('merchant', 'payer', 'rail')),
  ADD CONSTRAINT "subscriptions_refund" CHECK (("refund_amount" IS NULL) = ("refund_state" IS NULL) AND ("refund_amount" IS NULL OR "refund_amount" > 0)),
  ADD CONSTRAINT "subscriptions_refund_state" CHECK ("refund_state" IS NULL OR "refund_state" IN ('refund_due', 'refunded'));

ALTER TABLE "ledger"."subscription_charges"
  ADD CONSTRAINT "subscription_charges_state" CHECK ("state" IN ('requested', 'paid', 'failed', 'refused', 'voided')),
  ADD CONSTRAINT "subscription_charges_index" CHECK ("period_index" >= 0 AND "attempt" >= 0),
  ADD CONSTRAINT "subscription_charges_amount_positive" CHECK ("amount" > 0),
  ADD CONSTRAINT "subscription_charges_period" CHECK ("period_end" > "period_start");
