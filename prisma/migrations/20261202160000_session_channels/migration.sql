-- MPP evm session channels (issue 14 part 3): the facilitator's book per channel, the merchant's charges against it,
-- the channel transactions it sends (exactly once), the hash top-ups it counted, and the channel outbox for the ledger.

-- CreateTable
CREATE TABLE "facilitator"."session_channels" (
    "channel_id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "merchant_id" UUID,
    "network" TEXT NOT NULL,
    "chain_id" INTEGER NOT NULL,
    "escrow" TEXT NOT NULL,
    "token" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "payee" TEXT NOT NULL,
    "authorized_signer" TEXT NOT NULL,
    "deposit" NUMERIC(78,0) NOT NULL,
    "accepted_cumulative" NUMERIC(78,0) NOT NULL,
    "accepted_signature" TEXT,
    "spent" NUMERIC(78,0) NOT NULL,
    "settled_on_chain" NUMERIC(78,0) NOT NULL,
    "min_voucher_delta" NUMERIC(78,0) NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'open',
    "close_requested_at" TIMESTAMPTZ(3),
    "unsettled_since" TIMESTAMPTZ(3),
    "last_voucher_at" TIMESTAMPTZ(3),
    "last_challenge_id" TEXT NOT NULL,
    "open_tx_hash" TEXT NOT NULL,
    "close_tx_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_channels_pkey" PRIMARY KEY ("channel_id"),
    CONSTRAINT "session_channels_state_check" CHECK ("state" IN ('open', 'closing', 'closed')),
    CONSTRAINT "session_channels_amounts_check" CHECK ("settled_on_chain" >= 0 AND "settled_on_chain" <= "accepted_cumulative" AND "accepted_cumulative" <= "deposit" AND "spent" >= 0 AND "spent" <= "accepted_cumulative")
);

-- CreateIndex
CREATE INDEX "session_channels_state_unsettled_since_idx" ON "facilitator"."session_channels"("state", "unsettled_since");

-- CreateTable
CREATE TABLE "facilitator"."session_charges" (
    "channel_id" TEXT NOT NULL,
    "charge_id" TEXT NOT NULL,
    "amount" NUMERIC(78,0) NOT NULL,
    "units" NUMERIC(78,0),
    "spent_after" NUMERIC(78,0) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_charges_pkey" PRIMARY KEY ("channel_id", "charge_id")
);

-- CreateTable
CREATE TABLE "facilitator"."session_deposits" (
    "tx_hash" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "amount" NUMERIC(78,0) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_deposits_pkey" PRIMARY KEY ("tx_hash")
);

-- CreateTable
CREATE TABLE "facilitator"."session_operations" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "request_key" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "to_address" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "signer" TEXT NOT NULL,
    "tx_hash" TEXT,
    "tx_nonce" INTEGER,
    "raw_tx" TEXT,
    "outcome" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_operations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "session_operations_request_key" ON "facilitator"."session_operations"("request_key");

-- CreateIndex
CREATE UNIQUE INDEX "session_operations_tx_hash" ON "facilitator"."session_operations"("tx_hash");

-- CreateIndex
CREATE INDEX "session_operations_status_updated_at_idx" ON "facilitator"."session_operations"("status", "updated_at");

-- CreateTable
CREATE TABLE "facilitator"."channel_events" (
    "id" BIGSERIAL NOT NULL,
    "channel_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "snapshot" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),

    CONSTRAINT "channel_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "channel_events_unpublished_idx" ON "facilitator"."channel_events"("id") WHERE "published_at" IS NULL;
