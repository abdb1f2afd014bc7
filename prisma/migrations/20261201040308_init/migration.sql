-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "facilitator";

-- CreateSchema (added by hand: the ledger and merchant apps own these schemas but have no tables yet,
-- and the engine only emits CREATE SCHEMA for a schema that holds a model)
CREATE SCHEMA IF NOT EXISTS "ledger";
CREATE SCHEMA IF NOT EXISTS "merchant";

-- CreateEnum
CREATE TYPE "facilitator"."payment_state" AS ENUM ('received', 'verified', 'submitted', 'confirmed', 'failed', 'expired');

-- CreateTable
CREATE TABLE "facilitator"."payments" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "authorization_nonce" TEXT NOT NULL,
    "pay_to" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "valid_after" DECIMAL(78,0) NOT NULL,
    "valid_before" DECIMAL(78,0) NOT NULL,
    "scheme" TEXT NOT NULL,
    "x402_version" INTEGER NOT NULL,
    "payload_hash" TEXT NOT NULL,
    "state" "facilitator"."payment_state" NOT NULL,
    "signer" TEXT,
    "tx_hash" TEXT,
    "tx_nonce" INTEGER,
    "error_reason" TEXT,
    "error_message" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "submitted_at" TIMESTAMPTZ(3),
    "settled_at" TIMESTAMPTZ(3),

    CONSTRAINT "payments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "facilitator"."payment_idempotency_keys" (
    "key" TEXT NOT NULL,
    "payload_hash" TEXT NOT NULL,
    "payment_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "payment_idempotency_keys_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "facilitator"."payment_events" (
    "id" BIGSERIAL NOT NULL,
    "payment_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),

    CONSTRAINT "payment_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "payments_tx_hash_key" ON "facilitator"."payments"("tx_hash");

-- CreateIndex
CREATE INDEX "payments_state_updated_at_idx" ON "facilitator"."payments"("state", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "payments_authorization_key" ON "facilitator"."payments"("network", "asset", "payer", "authorization_nonce");

-- CreateIndex
CREATE INDEX "payment_idempotency_keys_payment_id_idx" ON "facilitator"."payment_idempotency_keys"("payment_id");

-- CreateIndex
CREATE INDEX "payment_events_unpublished_idx" ON "facilitator"."payment_events"("published_at", "id");

-- CreateIndex
CREATE INDEX "payment_events_payment_id_id_idx" ON "facilitator"."payment_events"("payment_id", "id");

-- AddForeignKey
ALTER TABLE "facilitator"."payment_idempotency_keys" ADD CONSTRAINT "payment_idempotency_keys_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "facilitator"."payments"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."payment_events" ADD CONSTRAINT "payment_events_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "facilitator"."payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
