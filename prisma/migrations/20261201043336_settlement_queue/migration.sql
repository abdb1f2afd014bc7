-- AlterTable
ALTER TABLE "facilitator"."payments" ADD COLUMN     "settle_data" TEXT,
ADD COLUMN     "settle_to" TEXT;

-- CreateTable
CREATE TABLE "facilitator"."payment_transactions" (
    "hash" TEXT NOT NULL,
    "payment_id" UUID NOT NULL,
    "network" TEXT NOT NULL,
    "signer" TEXT NOT NULL,
    "nonce" INTEGER NOT NULL,
    "raw_tx" TEXT NOT NULL,
    "max_fee_per_gas" DECIMAL(78,0) NOT NULL,
    "max_priority_fee_per_gas" DECIMAL(78,0) NOT NULL,
    "gas_limit" DECIMAL(78,0) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "payment_transactions_pkey" PRIMARY KEY ("hash")
);

-- CreateIndex
CREATE INDEX "payment_transactions_payment_id_idx" ON "facilitator"."payment_transactions"("payment_id");

-- CreateIndex
CREATE INDEX "payment_transactions_network_signer_nonce_idx" ON "facilitator"."payment_transactions"("network", "signer", "nonce");

-- AddForeignKey
ALTER TABLE "facilitator"."payment_transactions" ADD CONSTRAINT "payment_transactions_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "facilitator"."payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
