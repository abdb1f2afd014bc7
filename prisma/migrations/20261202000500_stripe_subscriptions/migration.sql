-- The MPP subscription intent's Stripe profile (issue 13): the Stripe objects of a stripe subscription, and each
-- validated paid invoice once per invoice and once per period (a late one is kept, never counted).
-- CreateTable
CREATE TABLE "facilitator"."stripe_subscriptions" (
    "subscription_id" TEXT NOT NULL,
    "customer_id" TEXT NOT NULL,
    "stripe_subscription_id" TEXT NOT NULL,
    "price_id" TEXT NOT NULL,
    "cancel_requested_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stripe_subscriptions_pkey" PRIMARY KEY ("subscription_id")
);

-- CreateTable
CREATE TABLE "facilitator"."stripe_subscription_invoices" (
    "invoice_id" TEXT NOT NULL,
    "subscription_id" TEXT NOT NULL,
    "period_index" INTEGER NOT NULL,
    "payment_intent_id" TEXT NOT NULL,
    "amount" DECIMAL(78,0) NOT NULL,
    "currency" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "event_id" TEXT,
    "paid_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stripe_subscription_invoices_pkey" PRIMARY KEY ("invoice_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "stripe_subscriptions_stripe_subscription_id_key" ON "facilitator"."stripe_subscriptions"("stripe_subscription_id");

-- CreateIndex
CREATE UNIQUE INDEX "stripe_subscription_invoices_subscription_id_period_index_key" ON "facilitator"."stripe_subscription_invoices"("subscription_id", "period_index");

-- AddForeignKey
ALTER TABLE "facilitator"."stripe_subscriptions" ADD CONSTRAINT "stripe_subscriptions_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "facilitator"."subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "facilitator"."stripe_subscription_invoices" ADD CONSTRAINT "stripe_subscription_invoices_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "facilitator"."subscriptions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "facilitator"."stripe_subscription_invoices" ADD CONSTRAINT "stripe_subscription_invoices_outcome" CHECK ("outcome" IN ('counted', 'late'));
