// vitest globalSetup for the e2e project: one local chain for the whole run.
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { deployLocalChain, writeManifest } from '../scripts/lib/deploy.mjs';
import { migrateDeploy } from '../scripts/lib/database.mjs';

export default async function setup(project: TestProject) {
  const port = Number(process.env.TEST_ANVIL_PORT ?? 8546);
  const t0 = performance.now();
  const repoRoot = project.config.root;
  const anvil = await startAnvil({ port });
  let manifestPath: string;
  try {
    const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
    manifestPath = writeManifest(path.join(repoRoot, '.local', 'chain-test.json'), manifest);
  } catch (err) {
    await anvil.stop();
    throw err;
  }
  // Test workers (forks pool) are spawned after global setup and inherit process.env.
  process.env.CHAIN_MANIFEST = manifestPath;
  if (process.env.TEST_SETUP_VERBOSE) {
    console.log(`[global-setup] chain on ${anvil.rpcUrl} in ${Math.round(performance.now() - t0)} ms`);
  }

  process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';
  await migrateDeploy({ databaseUrl: process.env.DATABASE_URL, quiet: true });

  return async () => {
    await anvil.stop();
  };
}
