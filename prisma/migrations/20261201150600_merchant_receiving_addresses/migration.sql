-- Where the money of a keyed merchant may go: the addresses it declared per network (CAIP-2), and a switch that lets
-- it settle to any address. Addresses are stored lowercase, so they compare case-insensitively.
ALTER TABLE "facilitator"."merchants" ADD COLUMN "allow_any_pay_to" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "facilitator"."merchant_receiving_addresses" (
    "merchant_id" UUID NOT NULL,
    "network" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "merchant_receiving_addresses_pkey" PRIMARY KEY ("merchant_id","network","address"),
    CONSTRAINT "merchant_receiving_addresses_address_check" CHECK ("address" ~ '^0x[0-9a-f]{40}$')
);

-- AddForeignKey
ALTER TABLE "facilitator"."merchant_receiving_addresses" ADD CONSTRAINT "merchant_receiving_addresses_merchant_id_fkey" FOREIGN KEY ("merchant_id") REFERENCES "facilitator"."merchants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Merchants that already settled keep working: every address they were paid at on chain is declared for them.
INSERT INTO "facilitator"."merchant_receiving_addresses" ("merchant_id", "network", "address")
SELECT DISTINCT "merchant_id", "network", lower("pay_to")
  FROM "facilitator"."payments"
 WHERE "merchant_id" IS NOT NULL AND "rail" = 'evm' AND lower("pay_to") ~ '^0x[0-9a-f]{40}$'
ON CONFLICT DO NOTHING;
