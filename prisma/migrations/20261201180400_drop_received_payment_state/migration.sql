-- The payment state `received` was declared but never written: it goes. PostgreSQL cannot drop an enum value, so a
-- new type replaces the old one. A payment in `received` must stop this migration loudly, not leave an obscure cast
-- error: a payment in it breaks the unique key below, whose name the error shows. (A plain statement:
-- the migration runner splits scripts on semicolons, so a DO block cannot run.)
CREATE TEMPORARY TABLE "payment_state_received_guard" ("payment" INTEGER, CONSTRAINT "no_payment_may_be_in_state_received" UNIQUE ("payment"));
INSERT INTO "payment_state_received_guard" SELECT 1 FROM "facilitator"."payments", generate_series(1, 2) WHERE "state" = 'received';
DROP TABLE "payment_state_received_guard";

ALTER TYPE "facilitator"."payment_state" RENAME TO "payment_state_old";
CREATE TYPE "facilitator"."payment_state" AS ENUM ('verified', 'submitted', 'confirmed', 'failed', 'expired');

-- Its predicate names the old type, so the partial index is dropped and built again over the new one.
DROP INDEX "facilitator"."payments_confirmed_block_idx";
ALTER TABLE "facilitator"."payments"
  ALTER COLUMN "state" TYPE "facilitator"."payment_state" USING "state"::text::"facilitator"."payment_state";
CREATE INDEX "payments_confirmed_block_idx" ON "facilitator"."payments"("network", "block_number") WHERE "state" = 'confirmed' AND "rail" = 'evm';

DROP TYPE "facilitator"."payment_state_old";
