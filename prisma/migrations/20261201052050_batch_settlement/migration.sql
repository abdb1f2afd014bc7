-- DropIndex
DROP INDEX "facilitator"."payments_tx_hash_key";

-- AlterTable
ALTER TABLE "facilitator"."payment_transactions" DROP CONSTRAINT "payment_transactions_pkey",
ADD CONSTRAINT "payment_transactions_pkey" PRIMARY KEY ("hash", "payment_id");

-- CreateIndex
CREATE INDEX "payments_tx_hash_idx" ON "facilitator"."payments"("tx_hash");
