#!/usr/bin/env node
// Offline replacement for `prisma migrate deploy` / `prisma migrate dev --create-only`,
// driven by Prisma's WebAssembly schema engine (see scripts/lib/database.mjs, toolchain.md §3).
//
//   node scripts/migrate.mjs deploy [--database-url URL] [--quiet]
//       create the database if missing, apply pending migrations from prisma/migrations/
//   node scripts/migrate.mjs create <name>
//       diff prisma/migrations/schema.snapshot.prisma against prisma/schema.prisma and write
//       prisma/migrations/<YYYYMMDDHHMMSS>_<name>/migration.sql (prints "no changes" if none)
//
// DATABASE_URL defaults to postgresql://postgres@127.0.0.1:5432/machine_payments.
import { createMigration, migrateDeploy } from './lib/database.mjs';

const USAGE = `usage:
  node scripts/migrate.mjs deploy [--database-url URL] [--quiet]
  node scripts/migrate.mjs create <name>`;

function parseArgs(argv) {
  const positional = [];
  const opts = { quiet: false, databaseUrl: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quiet' || a === '-q') opts.quiet = true;
    else if (a === '--database-url') {
      opts.databaseUrl = argv[++i];
      if (!opts.databaseUrl) throw new Error('--database-url needs a value');
    } else if (a.startsWith('--database-url=')) opts.databaseUrl = a.slice('--database-url='.length);
    else if (a === '-h' || a === '--help') opts.help = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else positional.push(a);
  }
  return { positional, opts };
}

let code = 0;
try {
  const { positional, opts } = parseArgs(process.argv.slice(2));
  const [command, ...rest] = positional;
  if (opts.help) {
    console.log(USAGE);
  } else if (command === 'deploy' && rest.length === 0) {
    await migrateDeploy({ databaseUrl: opts.databaseUrl, quiet: opts.quiet });
  } else if (command === 'create' && rest.length === 1) {
    await createMigration({ name: rest[0], quiet: opts.quiet });
  } else {
    console.error(USAGE);
    code = 2;
  }
} catch (err) {
  console.error(`migrate: ${err instanceof Error ? err.message : String(err)}`);
  code = 1;
}
// the pg pool and the wasm engine keep the event loop alive for a while; don't wait for them
process.exit(code);
