// vitest globalSetup for the e2e project: one migrated test database and one local chain for the whole run.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { deployLocalChain, writeManifest } from '../scripts/lib/deploy.mjs';
import { resetLocalState } from '../scripts/lib/local-state.mjs';

export default async function setup(project: TestProject) {
  const repoRoot = project.config.root;
  const t0 = performance.now();

  // Test workers (forks pool) are spawned after global setup and inherit process.env.
  process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';
  // In a child process: the migration engine's connection pool would hold this process open for 10 s.
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts/migrate.mjs'), 'deploy', '--quiet'], { stdio: 'inherit', env: process.env });
  // A fresh chain: payments and queued jobs of an earlier run must not be replayed onto it.
  await resetLocalState({ databaseUrl: process.env.DATABASE_URL });

  const port = Number(process.env.TEST_ANVIL_PORT ?? 8546);
  const anvil = await startAnvil({ port });
  try {
    const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
    process.env.CHAIN_MANIFEST = writeManifest(path.join(repoRoot, '.local', `chain-test-${port}.json`), manifest);
  } catch (err) {
    await anvil.stop();
    throw err;
  }
  if (process.env.TEST_SETUP_VERBOSE) console.log(`[global-setup] database and chain ready in ${Math.round(performance.now() - t0)} ms`);

  return async () => {
    await anvil.stop();
  };
}
