-- The answer a settled MPP claim gave, so the same credential sent again gets the same receipt (issue 11, item 4).
-- json, not jsonb: the receipt keeps its members in the order it was first answered with.
ALTER TABLE "facilitator"."mpp_claims" ADD COLUMN "receipt" JSON;
ALTER TABLE "facilitator"."mpp_claims" ADD COLUMN "payer" TEXT;
