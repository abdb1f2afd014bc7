-- AlterTable
ALTER TABLE "facilitator"."payments" ADD COLUMN     "challenge_id" TEXT,
ADD COLUMN     "protocol" TEXT NOT NULL DEFAULT 'x402',
ADD COLUMN     "rail" TEXT NOT NULL DEFAULT 'evm',
ADD COLUMN     "reference" TEXT,
ALTER COLUMN "x402_version" DROP NOT NULL;

-- CreateTable
CREATE TABLE "facilitator"."mpp_secrets" (
    "scope" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "previous_secret" TEXT,
    "rotated_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mpp_secrets_pkey" PRIMARY KEY ("scope")
);

-- CreateTable
CREATE TABLE "facilitator"."mpp_claims" (
    "scope" TEXT NOT NULL,
    "challenge_id" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "intent" TEXT NOT NULL,
    "credential_hash" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "payment_id" UUID,
    "reference" TEXT,
    "problem" TEXT,
    "detail" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mpp_claims_pkey" PRIMARY KEY ("scope","challenge_id")
);

-- CreateTable
CREATE TABLE "facilitator"."stripe_events" (
    "id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "object_id" TEXT,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stripe_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "mpp_claims_payment_id_idx" ON "facilitator"."mpp_claims"("payment_id");

-- CreateIndex
CREATE INDEX "stripe_events_object_id_idx" ON "facilitator"."stripe_events"("object_id");

-- CreateIndex
CREATE INDEX "payments_reference_idx" ON "facilitator"."payments"("reference");
