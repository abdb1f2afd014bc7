-- AlterTable
ALTER TABLE "facilitator"."payment_idempotency_keys" DROP CONSTRAINT "payment_idempotency_keys_pkey",
ADD COLUMN     "scope" TEXT NOT NULL DEFAULT '',
ADD CONSTRAINT "payment_idempotency_keys_pkey" PRIMARY KEY ("scope", "key");

-- Identifiers already bound by a merchant's payment belong to that merchant.
UPDATE "facilitator"."payment_idempotency_keys" k
   SET "scope" = p."merchant_id"::text
  FROM "facilitator"."payments" p
 WHERE k."payment_id" = p."id" AND p."merchant_id" IS NOT NULL;
