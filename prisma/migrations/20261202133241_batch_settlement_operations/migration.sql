-- CreateTable
CREATE TABLE "facilitator"."batch_settlement_operations" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "request_key" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "to_address" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "signer" TEXT,
    "tx_hash" TEXT,
    "tx_nonce" INTEGER,
    "raw_tx" TEXT,
    "answer" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "batch_settlement_operations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "batch_settlement_operations_request_key" ON "facilitator"."batch_settlement_operations"("request_key");

-- CreateIndex
CREATE UNIQUE INDEX "batch_settlement_operations_tx_hash" ON "facilitator"."batch_settlement_operations"("tx_hash");

-- CreateIndex
CREATE INDEX "batch_settlement_operations_status_updated_at_idx" ON "facilitator"."batch_settlement_operations"("status", "updated_at");
