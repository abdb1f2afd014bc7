-- CreateTable
CREATE TABLE "merchant"."a2a_tasks" (
    "id" TEXT NOT NULL,
    "tenant" TEXT NOT NULL DEFAULT '',
    "owner" TEXT NOT NULL,
    "context_id" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "status_timestamp" TIMESTAMPTZ(3) NOT NULL,
    "status" JSONB NOT NULL,
    "artifacts" JSONB NOT NULL,
    "history" JSONB NOT NULL,
    "metadata" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "a2a_tasks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "merchant"."a2a_payments" (
    "task_id" TEXT NOT NULL,
    "skill" TEXT NOT NULL,
    "input" TEXT NOT NULL,
    "settle_timing" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "offer" JSONB NOT NULL,
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "pay_to" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "payer" TEXT,
    "transaction" TEXT,
    "error" TEXT,
    "receipts" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "a2a_payments_pkey" PRIMARY KEY ("task_id")
);

-- CreateTable
CREATE TABLE "merchant"."a2a_payment_submissions" (
    "id" BIGSERIAL NOT NULL,
    "task_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "a2a_payment_submissions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "a2a_tasks_scope_status_timestamp_idx" ON "merchant"."a2a_tasks"("tenant", "owner", "status_timestamp" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "a2a_tasks_context_id_idx" ON "merchant"."a2a_tasks"("context_id");

-- CreateIndex
CREATE INDEX "a2a_payments_status_updated_at_idx" ON "merchant"."a2a_payments"("status", "updated_at");

-- CreateIndex
CREATE INDEX "a2a_payment_submissions_task_id_idx" ON "merchant"."a2a_payment_submissions"("task_id");

-- CreateIndex
CREATE UNIQUE INDEX "a2a_payment_submissions_authorization_key" ON "merchant"."a2a_payment_submissions"("network", "asset", "payer", "nonce");

-- AddForeignKey
ALTER TABLE "merchant"."a2a_payment_submissions" ADD CONSTRAINT "a2a_payment_submissions_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "merchant"."a2a_payments"("task_id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Written by hand (Prisma's schema language cannot express these): the payment lifecycle's vocabulary and money as
-- CHECKs, so that no bug in the agent can store a payment outside it.
ALTER TABLE "merchant"."a2a_payments"
    ADD CONSTRAINT "a2a_payments_status_check" CHECK ("status" IN ('required', 'submitted', 'verified', 'completed', 'failed', 'rejected', 'canceled')),
    ADD CONSTRAINT "a2a_payments_settle_timing_check" CHECK ("settle_timing" IN ('before-work', 'after-work')),
    ADD CONSTRAINT "a2a_payments_amount_positive" CHECK ("amount" > 0),
    ADD CONSTRAINT "a2a_payments_attempts_not_negative" CHECK ("attempts" >= 0),
    ADD CONSTRAINT "a2a_payments_completed_has_transaction" CHECK ("status" <> 'completed' OR "transaction" IS NOT NULL);

ALTER TABLE "merchant"."a2a_tasks"
    ADD CONSTRAINT "a2a_tasks_state_check" CHECK ("state" LIKE 'TASK\_STATE\_%');
