-- Payment channels the ledger books from the facilitator's channel events (issue 14 part 6): the channel's state and
-- escrow, its money being in its accounts.
-- CreateTable
CREATE TABLE "ledger"."channels" (
    "merchant_id" UUID NOT NULL,
    "channel_id" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "escrow" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "payee" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "grace_ends_at" TIMESTAMPTZ(3),
    "last_event_id" BIGINT NOT NULL,
    "opened_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "closed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "channels_pkey" PRIMARY KEY ("merchant_id","channel_id")
);

-- CreateIndex
CREATE INDEX "channels_merchant_escrow_idx" ON "ledger"."channels"("merchant_id", "network", "escrow");

-- The three states, forward only (the service never moves one back)
ALTER TABLE "ledger"."channels" ADD CONSTRAINT "channels_state_check" CHECK ("state" IN ('open', 'closing', 'closed'));
