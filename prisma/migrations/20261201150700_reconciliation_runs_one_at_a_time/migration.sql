-- Report links carry the run's link generation: revoking the run's links bumps it, so every older link stops working.
ALTER TABLE "ledger"."reconciliation_runs" ADD COLUMN "link_generation" INTEGER NOT NULL DEFAULT 0;

-- What a run reconciles the ledger against (chain, stripe), sorted. Identical requests (merchant, period, sources) share a run.
-- Runs from before this column are marked with every source of their time.
ALTER TABLE "ledger"."reconciliation_runs" ADD COLUMN "sources" TEXT[] NOT NULL DEFAULT ARRAY['chain', 'stripe']::TEXT[];
ALTER TABLE "ledger"."reconciliation_runs" ALTER COLUMN "sources" DROP DEFAULT;

-- One queued or running run per merchant. Older in-flight duplicates (allowed before) are closed so the index can be built.
UPDATE "ledger"."reconciliation_runs" r
   SET "status" = 'failed', "finished_at" = now(), "error" = 'superseded: one reconciliation run at a time per merchant'
 WHERE r."status" IN ('queued', 'running')
   AND EXISTS (SELECT 1 FROM "ledger"."reconciliation_runs" n
                WHERE n."merchant_id" = r."merchant_id" AND n."status" IN ('queued', 'running')
                  AND (n."created_at", n."id") > (r."created_at", r."id"));
CREATE UNIQUE INDEX "reconciliation_runs_one_in_flight_key" ON "ledger"."reconciliation_runs"("merchant_id") WHERE "status" IN ('queued', 'running');
