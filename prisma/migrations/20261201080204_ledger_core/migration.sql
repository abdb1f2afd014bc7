-- CreateTable
CREATE TABLE "ledger"."accounts" (
    "key" BIGSERIAL NOT NULL,
    "merchant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "asset" TEXT NOT NULL,
    "code" INTEGER NOT NULL,
    "flags" SMALLINT NOT NULL,
    "normal_balance" TEXT NOT NULL,
    "reference" TEXT,
    "debits_pending" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "debits_posted" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "credits_pending" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "credits_posted" DECIMAL(78,0) NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "ledger"."transfers" (
    "merchant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "debit_account_key" BIGINT NOT NULL,
    "credit_account_key" BIGINT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "pending_id" UUID,
    "asset" TEXT NOT NULL,
    "code" INTEGER NOT NULL,
    "flags" SMALLINT NOT NULL,
    "timeout" INTEGER NOT NULL DEFAULT 0,
    "expires_at" TIMESTAMPTZ(6),
    "reference" TEXT,
    "ts" TIMESTAMPTZ(6) NOT NULL,
    "debit_debits_posted" DECIMAL(78,0) NOT NULL,
    "debit_credits_posted" DECIMAL(78,0) NOT NULL,
    "credit_debits_posted" DECIMAL(78,0) NOT NULL,
    "credit_credits_posted" DECIMAL(78,0) NOT NULL,

    CONSTRAINT "transfers_pkey" PRIMARY KEY ("merchant_id","id")
);

-- CreateTable
CREATE TABLE "ledger"."failed_transfers" (
    "merchant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "result" TEXT NOT NULL,
    "failed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "failed_transfers_pkey" PRIMARY KEY ("merchant_id","id")
);

-- CreateTable
CREATE TABLE "ledger"."pending_timeouts" (
    "merchant_id" UUID NOT NULL,
    "transfer_id" UUID NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "pending_timeouts_pkey" PRIMARY KEY ("merchant_id","transfer_id")
);

-- CreateIndex
CREATE INDEX "accounts_merchant_key_idx" ON "ledger"."accounts"("merchant_id", "key");

-- CreateIndex
CREATE UNIQUE INDEX "accounts_merchant_id_key" ON "ledger"."accounts"("merchant_id", "id");

-- CreateIndex
CREATE INDEX "transfers_debit_account_ts_idx" ON "ledger"."transfers"("debit_account_key", "ts", "seq");

-- CreateIndex
CREATE INDEX "transfers_credit_account_ts_idx" ON "ledger"."transfers"("credit_account_key", "ts", "seq");

-- CreateIndex
CREATE INDEX "transfers_merchant_ts_idx" ON "ledger"."transfers"("merchant_id", "ts", "seq");

-- CreateIndex
CREATE INDEX "pending_timeouts_expires_at_idx" ON "ledger"."pending_timeouts"("expires_at");

-- AddForeignKey
ALTER TABLE "ledger"."transfers" ADD CONSTRAINT "transfers_debit_account_key_fkey" FOREIGN KEY ("debit_account_key") REFERENCES "ledger"."accounts"("key") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger"."transfers" ADD CONSTRAINT "transfers_credit_account_key_fkey" FOREIGN KEY ("credit_account_key") REFERENCES "ledger"."accounts"("key") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Written by hand (Prisma's schema language cannot express these): at most one post or void per pending
-- transfer, the ledger's invariants as constraints, and transfers made append-only, so that no bug in an
-- application can store a broken ledger.
CREATE UNIQUE INDEX "transfers_pending_id_key" ON "ledger"."transfers"("merchant_id", "pending_id") WHERE "pending_id" IS NOT NULL;

ALTER TABLE "ledger"."accounts"
    ADD CONSTRAINT "accounts_balances_not_negative" CHECK ("debits_pending" >= 0 AND "debits_posted" >= 0 AND "credits_pending" >= 0 AND "credits_posted" >= 0),
    ADD CONSTRAINT "accounts_debits_must_not_exceed_credits" CHECK ("flags" & 2 = 0 OR "debits_pending" + "debits_posted" <= "credits_posted"),
    ADD CONSTRAINT "accounts_credits_must_not_exceed_debits" CHECK ("flags" & 4 = 0 OR "credits_pending" + "credits_posted" <= "debits_posted"),
    ADD CONSTRAINT "accounts_normal_balance_check" CHECK ("normal_balance" IN ('credit', 'debit')),
    ADD CONSTRAINT "accounts_code_check" CHECK ("code" BETWEEN 1 AND 65535);

ALTER TABLE "ledger"."transfers"
    ADD CONSTRAINT "transfers_amount_positive" CHECK ("amount" > 0),
    ADD CONSTRAINT "transfers_accounts_differ" CHECK ("debit_account_key" <> "credit_account_key");

-- Rules, not a trigger: migrations run through a driver that splits scripts at every semicolon, which a function
-- body cannot survive. The cast fails with the message, so an UPDATE or DELETE of a transfer is an error.
CREATE RULE "transfers_no_update" AS ON UPDATE TO "ledger"."transfers"
    DO INSTEAD SELECT ('ledger.transfers is append-only: correct transfer ' || old.id || ' with another transfer')::boolean;

CREATE RULE "transfers_no_delete" AS ON DELETE TO "ledger"."transfers"
    DO INSTEAD SELECT ('ledger.transfers is append-only: transfer ' || old.id || ' cannot be deleted')::boolean;
