#!/usr/bin/env node
// Generates the Prisma client into libs/db/src/generated/ offline, and only when needed.
//
//   node scripts/prisma-generate.mjs [--force] [--quiet]
//
// Called before every test run and app start, so the common case (client already generated from
// the same schema by the same Prisma version) returns in a few milliseconds: a sha256 over
// schema.prisma + the prisma / @prisma/client versions is stored in the output folder and compared.
//
// Offline notes (docs: toolchain.md §3): every Prisma CLI command first tries to download the native
// schema engine unless PRISMA_SCHEMA_ENGINE_BINARY points at an existing file; `generate` never runs
// that engine, so any file will do (we use the node binary).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));

const schemaPath = path.join(root, 'prisma', 'schema.prisma');
const outDir = path.join(root, 'libs', 'db', 'src', 'generated');
const stampPath = path.join(outDir, '.schema-hash');
const lockDir = path.join(root, 'libs', 'db', 'src', '.generated.lock');

export function expectedStamp() {
  const h = createHash('sha256');
  h.update(fs.readFileSync(schemaPath));
  h.update(`\0prisma@${require('prisma/package.json').version}`);
  h.update(`\0@prisma/client@${require('@prisma/client/package.json').version}`);
  return h.digest('hex');
}

export function isUpToDate() {
  try {
    return fs.readFileSync(stampPath, 'utf8').trim() === expectedStamp() && fs.existsSync(path.join(outDir, 'client.ts'));
  } catch {
    return false;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** mkdir-based lock so two concurrent callers (test run + app start) do not write the folder at once. */
async function withLock(fn) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      try {
        // a lock older than 60 s belongs to a crashed process
        if (Date.now() - fs.statSync(lockDir).mtimeMs > 60_000) fs.rmSync(lockDir, { recursive: true, force: true });
      } catch {
        /* removed meanwhile */
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockDir}`);
      await sleep(100);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

export async function generate({ force = false, quiet = false } = {}) {
  if (!force && isUpToDate()) {
    if (!quiet) console.log('prisma client up to date');
    return false;
  }
  return withLock(async () => {
    if (!force && isUpToDate()) return false; // another process generated it while we waited
    const started = Date.now();
    const env = {
      ...process.env,
      PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || process.execPath,
      DATABASE_URL: process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments',
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
      CHECKPOINT_DISABLE: '1',
    };
    const stamp = expectedStamp();
    const cli = require.resolve('prisma/build/index.js');
    const res = spawnSync(process.execPath, [cli, 'generate', '--schema', schemaPath], {
      cwd: root,
      env,
      encoding: 'utf8',
    });
    if (res.status !== 0) {
      process.stderr.write(res.stdout ?? '');
      process.stderr.write(res.stderr ?? '');
      throw new Error(`prisma generate failed (exit ${res.status ?? res.signal})`);
    }
    fs.writeFileSync(stampPath, `${stamp}\n`);
    if (!quiet) console.log(`prisma client generated into ${path.relative(root, outDir)} in ${Date.now() - started} ms`);
    return true;
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  try {
    await generate({ force: args.includes('--force'), quiet: args.includes('--quiet') });
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
