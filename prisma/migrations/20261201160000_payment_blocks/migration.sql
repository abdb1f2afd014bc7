-- The block a confirmed payment's transaction was mined in, so a reorg that drops that block is noticed: the payment
-- goes back to submitted and is judged again. Only recent confirmed payments are watched, by network and block.
ALTER TABLE "facilitator"."payments" ADD COLUMN "block_number" DECIMAL(78,0);
ALTER TABLE "facilitator"."payments" ADD COLUMN "block_hash" TEXT;
CREATE INDEX "payments_confirmed_block_idx" ON "facilitator"."payments"("network", "block_number") WHERE "state" = 'confirmed' AND "rail" = 'evm';
