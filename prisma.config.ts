// Prisma 7 configuration (the CLI reads this instead of `url` in schema.prisma).
//
// DATABASE_URL is read with a default so that commands that do not touch the database
// (`prisma generate`, `validate`, `format`) work with no environment at all. Prisma's own
// `env('DATABASE_URL')` helper throws when the variable is unset, so it is not used here.
//
// Note: `prisma migrate *` needs a native engine download; offline, use
// `node scripts/migrate.mjs deploy|create` (same migrations folder, same _prisma_migrations table).
import { defineConfig } from 'prisma/config';

export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/machine_payments';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: {
    path: 'prisma/migrations',
  },
  datasource: {
    url: process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
  },
});
