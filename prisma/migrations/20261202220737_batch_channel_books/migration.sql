-- x402 batch-settlement channels in the one channel ledger model (issue 14 part 6): the facilitator's own record of
-- each batch channel its operations moved (its channel.* events go to channel_events with each change), and the
-- ledger's channels told apart by scheme.
-- AlterTable
ALTER TABLE "ledger"."channels" ADD COLUMN     "scheme" TEXT NOT NULL DEFAULT 'mpp-session';

-- CreateTable
CREATE TABLE "facilitator"."batch_channels" (
    "channel_id" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "merchant_id" UUID,
    "payer" TEXT NOT NULL,
    "receiver" TEXT NOT NULL,
    "token" TEXT NOT NULL,
    "deposited" DECIMAL(78,0) NOT NULL,
    "claimed" DECIMAL(78,0) NOT NULL,
    "settled" DECIMAL(78,0) NOT NULL,
    "refunded" DECIMAL(78,0) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "batch_channels_pkey" PRIMARY KEY ("channel_id")
);

-- CreateIndex
CREATE INDEX "batch_channels_receiver_idx" ON "facilitator"."batch_channels"("network", "receiver", "token");

-- Figures never below zero, and only claimed value is ever settled
ALTER TABLE "facilitator"."batch_channels" ADD CONSTRAINT "batch_channels_figures_check"
  CHECK ("deposited" >= 0 AND "claimed" >= 0 AND "refunded" >= 0 AND "settled" >= 0 AND "settled" <= "claimed");

-- The two kinds of channel the ledger books
ALTER TABLE "ledger"."channels" ADD CONSTRAINT "channels_scheme_check" CHECK ("scheme" IN ('mpp-session', 'x402-batch'));

-- A batch channel's claimed total is matched against the contract's: a break kind of its own
ALTER TABLE "ledger"."reconciliation_rows"
  DROP CONSTRAINT "reconciliation_rows_kind_check",
  ADD CONSTRAINT "reconciliation_rows_kind_check" CHECK ("kind" IN ('matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund',
    'channel_deposit_mismatch', 'channel_settled_mismatch', 'channel_claimed_mismatch', 'channel_refunded_mismatch', 'channel_not_finalized',
    'channel_closed_on_chain_not_in_books', 'channel_not_on_chain', 'channel_unknown_to_books', 'prepaid_funding_missing', 'prepaid_funding_mismatch',
    'prepaid_balance_mismatch', 'prepaid_negative'));
