-- A verified payment whose settlement outcome the facilitator could not tell yet waits in `settling` (its task in
-- working) until the merchant agent asks again and learns it.
ALTER TABLE "merchant"."a2a_payments" DROP CONSTRAINT "a2a_payments_status_check";
ALTER TABLE "merchant"."a2a_payments"
    ADD CONSTRAINT "a2a_payments_status_check" CHECK ("status" IN ('required', 'submitted', 'verified', 'settling', 'completed', 'failed', 'rejected', 'canceled'));
