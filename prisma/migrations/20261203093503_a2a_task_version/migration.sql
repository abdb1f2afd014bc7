-- AlterTable
ALTER TABLE "merchant"."a2a_tasks" ADD COLUMN     "version" INTEGER NOT NULL DEFAULT 0;
