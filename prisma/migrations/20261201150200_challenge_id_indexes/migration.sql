-- Lookups by MPP challenge id: a Stripe payment by its challenge (webhooks, the sweep), and the challenge's claim
-- when Stripe's word settles or fails it (by challenge id alone, so the (scope, challenge_id) key cannot serve it).
CREATE INDEX "payments_challenge_id_idx" ON "facilitator"."payments"("challenge_id");

CREATE INDEX "mpp_claims_challenge_id_idx" ON "facilitator"."mpp_claims"("challenge_id");
