-- CreateTable
CREATE TABLE "ledger"."receiving_addresses" (
    "merchant_id" UUID NOT NULL,
    "network" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "receiving_addresses_pkey" PRIMARY KEY ("merchant_id","network","address")
);

-- Correcting transfers (code 9) name the transfer they correct in reference: reconciliation looks them up by it.
CREATE INDEX "transfers_correction_reference_idx" ON "ledger"."transfers"("merchant_id", "reference") WHERE "code" = 9;
