#!/usr/bin/env node
// Runs one app in the foreground, for local runs outside Docker:
//   npm run start:facilitator | start:ledger | start:merchant-agent | start:fake-stripe
//   (= node scripts/start-app.mjs <app>)
// Reads ./.env if there is one (variables already set in the shell win over it; see .env.example), generates the
// Prisma client if it is missing, builds the apps if a source is newer than the build, then runs the app's main.js
// in this process (so Ctrl-C and SIGTERM reach its graceful shutdown directly). It does not migrate the database:
// run `npm run db:migrate` first.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { APPS, appEntry, buildIfStale } from './lib/build.mjs';
import { REPO_ROOT } from './lib/contracts.mjs';

const app = process.argv[2];
if (!APPS.includes(app)) {
  console.error(`usage: node scripts/start-app.mjs ${APPS.join('|')}`);
  process.exit(2);
}
const log = (line) => console.error(`start:${app}: ${line}`);

const envFile = path.join(REPO_ROOT, '.env');
if (fs.existsSync(envFile)) {
  process.loadEnvFile(envFile);
  log(`read ${path.relative(process.cwd(), envFile) || '.env'}`);
}

if (!fs.existsSync(path.join(REPO_ROOT, 'libs', 'db', 'src', 'generated'))) {
  const generated = spawnSync(process.execPath, ['scripts/prisma-generate.mjs', '--quiet'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (generated.status !== 0) process.exit(1);
}
buildIfStale({ log });

await import(pathToFileURL(appEntry(app)).href);
