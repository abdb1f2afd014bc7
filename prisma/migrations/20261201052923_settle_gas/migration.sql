-- AlterTable
ALTER TABLE "facilitator"."payments" ADD COLUMN     "settle_gas" DECIMAL(78,0);
