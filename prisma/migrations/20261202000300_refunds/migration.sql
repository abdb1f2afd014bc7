-- Refunds of confirmed payments (issue 13 item 5), one row per refund request the merchant made, denied ones included:
-- the idempotency key is unique per merchant and a repeated request gets the row's answer again. An EVM refund keeps
-- its signed transaction (hash, nonce, raw bytes) before it is broadcast, so a crash never sends a second one.
-- CreateTable
CREATE TABLE "facilitator"."refunds" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "merchant_id" UUID NOT NULL,
    "payment_id" UUID NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "rail" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "reason" TEXT NOT NULL,
    "reason_detail" TEXT,
    "refund_to" TEXT,
    "payer_signature" TEXT,
    "denial_reason" TEXT,
    "failure_reason" TEXT,
    "failure_message" TEXT,
    "reference" TEXT,
    "signer" TEXT,
    "tx_hash" TEXT,
    "tx_nonce" INTEGER,
    "raw_tx" TEXT,
    "block_number" DECIMAL(78,0),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "refunds_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "refunds_merchant_idempotency_key" ON "facilitator"."refunds"("merchant_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "refunds_payment_id_created_at_idx" ON "facilitator"."refunds"("payment_id", "created_at");

-- CreateIndex
CREATE INDEX "refunds_status_updated_at_idx" ON "facilitator"."refunds"("status", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "refunds_tx_hash_key" ON "facilitator"."refunds"("tx_hash");

-- CreateIndex
CREATE INDEX "refunds_reference_idx" ON "facilitator"."refunds"("reference");

-- AddForeignKey
ALTER TABLE "facilitator"."refunds" ADD CONSTRAINT "refunds_merchant_id_fkey" FOREIGN KEY ("merchant_id") REFERENCES "facilitator"."merchants"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."refunds" ADD CONSTRAINT "refunds_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "facilitator"."payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- What the service checks, held by the database too (Prisma cannot declare CHECK constraints).
ALTER TABLE "facilitator"."refunds"
  ADD CONSTRAINT "refunds_amount_positive" CHECK ("amount" > 0),
  ADD CONSTRAINT "refunds_status" CHECK ("status" IN ('pending', 'executed', 'denied', 'failed')),
  ADD CONSTRAINT "refunds_rail" CHECK ("rail" IN ('evm', 'stripe')),
  ADD CONSTRAINT "refunds_denied_has_reason" CHECK (("status" = 'denied') = ("denial_reason" IS NOT NULL));
