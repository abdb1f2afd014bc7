-- MPP subscriptions on the facilitator (issue 13): the payer's grant (subscriptions), its pre-signed authorizations
-- sealed at rest (subscription_authorizations), each charge the ledger asked for, once (subscription_charges), the
-- subscription fields of a charge's payment, and the cursors of the chain watchers (chain_cursors).
-- AlterTable
ALTER TABLE "facilitator"."payments" ADD COLUMN     "subscription_attempt" INTEGER,
ADD COLUMN     "subscription_id" TEXT,
ADD COLUMN     "subscription_period" INTEGER;

-- CreateTable
CREATE TABLE "facilitator"."subscriptions" (
    "id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "merchant_id" UUID,
    "challenge_id" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "pay_to" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "period_unit" TEXT NOT NULL,
    "period_count" INTEGER NOT NULL,
    "anchor" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3),
    "authorized_periods" INTEGER,
    "plan_id" UUID,
    "external_id" TEXT,
    "first_payment_id" UUID NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'active',
    "cancel_at" TIMESTAMPTZ(3),
    "cancel_command_id" TEXT,
    "canceled_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "revoke_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscriptions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "facilitator"."subscription_authorizations" (
    "subscription_id" TEXT NOT NULL,
    "period_index" INTEGER NOT NULL,
    "nonce" TEXT NOT NULL,
    "valid_after" DECIMAL(78,0) NOT NULL,
    "valid_before" DECIMAL(78,0) NOT NULL,
    "sealed" BYTEA,
    "key_id" TEXT,
    "destroyed_at" TIMESTAMPTZ(3),

    CONSTRAINT "subscription_authorizations_pkey" PRIMARY KEY ("subscription_id","period_index")
);

-- CreateTable
CREATE TABLE "facilitator"."subscription_charges" (
    "subscription_id" TEXT NOT NULL,
    "period_index" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "command_id" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "payment_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_charges_pkey" PRIMARY KEY ("subscription_id","period_index","attempt")
);

-- CreateTable
CREATE TABLE "facilitator"."chain_cursors" (
    "name" TEXT NOT NULL,
    "block" DECIMAL(78,0) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "chain_cursors_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "subscriptions_state_network_idx" ON "facilitator"."subscriptions"("state", "network");

-- CreateIndex
CREATE UNIQUE INDEX "subscriptions_scope_challenge_id_key" ON "facilitator"."subscriptions"("scope", "challenge_id");

-- CreateIndex
CREATE INDEX "subscription_authorizations_nonce_idx" ON "facilitator"."subscription_authorizations"("nonce");

-- CreateIndex
CREATE INDEX "subscription_authorizations_key_id_idx" ON "facilitator"."subscription_authorizations"("key_id");

-- CreateIndex
CREATE UNIQUE INDEX "subscription_charges_command_id_key" ON "facilitator"."subscription_charges"("command_id");

-- CreateIndex
CREATE INDEX "payments_subscription_period_idx" ON "facilitator"."payments"("subscription_id", "subscription_period");

-- AddForeignKey
-- Deferred: activation writes the period 0 payment and its subscription in one transaction, and each points at the
-- other (Prisma cannot declare a deferrable foreign key).
ALTER TABLE "facilitator"."payments" ADD CONSTRAINT "payments_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "facilitator"."subscriptions"("id") ON DELETE RESTRICT ON UPDATE CASCADE DEFERRABLE INITIALLY DEFERRED;

-- AddForeignKey
ALTER TABLE "facilitator"."subscriptions" ADD CONSTRAINT "subscriptions_merchant_id_fkey" FOREIGN KEY ("merchant_id") REFERENCES "facilitator"."merchants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."subscriptions" ADD CONSTRAINT "subscriptions_first_payment_id_fkey" FOREIGN KEY ("first_payment_id") REFERENCES "facilitator"."payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."subscription_authorizations" ADD CONSTRAINT "subscription_authorizations_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "facilitator"."subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."subscription_charges" ADD CONSTRAINT "subscription_charges_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "facilitator"."subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- What the code holds, held by the database too (Prisma cannot declare CHECK constraints).
ALTER TABLE "facilitator"."subscriptions"
  ADD CONSTRAINT "subscriptions_state" CHECK ("state" IN ('active', 'canceled', 'revoked')),
  ADD CONSTRAINT "subscriptions_period_unit" CHECK ("period_unit" IN ('day', 'week', 'month')),
  ADD CONSTRAINT "subscriptions_period_count_positive" CHECK ("period_count" > 0),
  ADD CONSTRAINT "subscriptions_amount_positive" CHECK ("amount" > 0),
  ADD CONSTRAINT "subscriptions_id_base64url" CHECK ("id" ~ '^[A-Za-z0-9_-]{16,64}$');

ALTER TABLE "facilitator"."subscription_authorizations"
  ADD CONSTRAINT "subscription_authorizations_sealed_with_key" CHECK (("sealed" IS NULL) = ("key_id" IS NULL));

ALTER TABLE "facilitator"."subscription_charges"
  ADD CONSTRAINT "subscription_charges_outcome" CHECK ("outcome" IN ('charged', 'refused')),
  ADD CONSTRAINT "subscription_charges_charged_has_payment" CHECK (("outcome" = 'charged') = ("payment_id" IS NOT NULL));

ALTER TABLE "facilitator"."payments"
  ADD CONSTRAINT "payments_subscription_fields" CHECK (("subscription_id" IS NULL) = ("subscription_period" IS NULL) AND ("subscription_id" IS NULL) = ("subscription_attempt" IS NULL));
