#!/usr/bin/env node
// The one test command: generate the Prisma client, type-check, lint, check the formatting, then every vitest project (unit specs in
// parallel; e2e specs one file at a time against real PostgreSQL, Redis and an anvil chain that the e2e global
// setup starts). Ends with one plain line: "N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const report = path.join(root, '.local', 'vitest-report.json');
const extraArgs = process.argv.slice(2);

function step(title, command, args) {
  console.log(`\n▶ ${title}`);
  const started = Date.now();
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    console.error(`✖ ${title} failed (${seconds} s)`);
    return false;
  }
  console.log(`✔ ${title} (${seconds} s)`);
  return true;
}

const checksPassed =
  step('prisma client', process.execPath, ['scripts/prisma-generate.mjs', '--quiet']) &&
  step('type-check', bin('tsc'), ['-p', 'tsconfig.json', '--noEmit']) &&
  step('lint', bin('eslint'), ['.']) &&
  step('format (npm run format fixes it)', bin('prettier'), ['--check', '--log-level', 'warn', '**/*.{ts,mts,mjs}']);
if (!checksPassed) {
  console.log('\n0 passed, 1 failed');
  process.exit(1);
}

fs.mkdirSync(path.dirname(report), { recursive: true });
fs.rmSync(report, { force: true });
const testsPassed = step('tests', bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extraArgs]);

let summary = { passed: 0, failed: testsPassed ? 0 : 1, skipped: 0 };
try {
  const results = JSON.parse(fs.readFileSync(report, 'utf8'));
  summary = { passed: results.numPassedTests, failed: results.numFailedTests, skipped: results.numPendingTests + results.numTodoTests };
  if (!testsPassed && summary.failed === 0) summary.failed = 1; // the run failed outside any test (setup, teardown, unhandled error)
} catch {
  // no report: the run died before writing it; counted as one failure above
}
console.log(`\n${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped`);
process.exit(testsPassed && summary.failed === 0 ? 0 : 1);
