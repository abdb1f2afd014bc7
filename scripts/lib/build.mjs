// Builds the apps into dist/ when any TypeScript source is newer than the build.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './contracts.mjs';

/** Each app's source folder; nest build mirrors it under dist/apps/<app>/. The fake Stripe server lives in a library. */
const APP_SOURCES = {
  facilitator: 'apps/facilitator/src',
  ledger: 'apps/ledger/src',
  'merchant-agent': 'apps/merchant-agent/src',
  'fake-stripe': 'libs/stripe/src',
};

export const APPS = Object.keys(APP_SOURCES);

/** The compiled entry of an app (or another file of it, relative to its src/). */
export function appEntry(app, file = 'main.js') {
  return path.join(REPO_ROOT, 'dist', 'apps', app, APP_SOURCES[app], file);
}

/** Returns true when it had to build. Throws if the build fails. */
export function buildIfStale({ env = process.env, log = () => {} } = {}) {
  const oldest = Math.min(...APPS.map((app) => appEntry(app)).map((f) => (fs.existsSync(f) ? fs.statSync(f).mtimeMs : 0)));
  const newest = Math.max(...['apps', 'libs'].flatMap((dir) => sourceTimes(path.join(REPO_ROOT, dir))));
  if (oldest > newest) return false;
  log('building the apps (nest build)…');
  const result = spawnSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, env, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('build failed');
  return true;
}

function sourceTimes(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceTimes(full);
    return entry.name.endsWith('.ts') && !/\.(e2e-)?spec\.ts$/.test(entry.name) ? [fs.statSync(full).mtimeMs] : [];
  });
}
