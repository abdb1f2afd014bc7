-- CreateTable
CREATE TABLE "ledger"."reconciliation_runs" (
    "id" UUID NOT NULL,
    "merchant_id" UUID NOT NULL,
    "period_from" TIMESTAMPTZ(6) NOT NULL,
    "period_to" TIMESTAMPTZ(6) NOT NULL,
    "trigger" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "progress" JSONB,
    "summary" JSONB,
    "totals" JSONB,
    "error" TEXT,
    "notified_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "reconciliation_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ledger"."reconciliation_rows" (
    "run_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "merchant_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "is_break" BOOLEAN NOT NULL,
    "key" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "entry_kind" TEXT NOT NULL,
    "reference" TEXT NOT NULL,
    "occurred_at" TIMESTAMPTZ(6) NOT NULL,
    "data" JSONB NOT NULL,

    CONSTRAINT "reconciliation_rows_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateIndex
CREATE INDEX "reconciliation_runs_merchant_id_created_at_idx" ON "ledger"."reconciliation_runs"("merchant_id", "created_at");

-- CreateIndex
CREATE INDEX "reconciliation_rows_merchant_id_key_idx" ON "ledger"."reconciliation_rows"("merchant_id", "key");

-- AddForeignKey
ALTER TABLE "ledger"."reconciliation_rows" ADD CONSTRAINT "reconciliation_rows_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "ledger"."reconciliation_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Written by hand (Prisma's schema language cannot express these): the lifecycle's values as constraints, and a
-- report's rows immutable once written (a later run writes its own rows, and breaks are fixed in the ledger).
ALTER TABLE "ledger"."reconciliation_runs"
    ADD CONSTRAINT "reconciliation_runs_period_check" CHECK ("period_from" < "period_to"),
    ADD CONSTRAINT "reconciliation_runs_trigger_check" CHECK ("trigger" IN ('api', 'schedule')),
    ADD CONSTRAINT "reconciliation_runs_status_check" CHECK ("status" IN ('queued', 'running', 'completed', 'failed'));

ALTER TABLE "ledger"."reconciliation_rows"
    ADD CONSTRAINT "reconciliation_rows_kind_check" CHECK ("kind" IN ('matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate')),
    ADD CONSTRAINT "reconciliation_rows_is_break_check" CHECK ("is_break" = ("kind" NOT IN ('matched', 'pending'))),
    ADD CONSTRAINT "reconciliation_rows_source_check" CHECK ("source" IN ('chain', 'stripe'));

CREATE RULE "reconciliation_rows_no_update" AS ON UPDATE TO "ledger"."reconciliation_rows"
    DO INSTEAD SELECT ('ledger.reconciliation_rows are written once: row ' || old.seq || ' of run ' || old.run_id || ' cannot change')::boolean;
