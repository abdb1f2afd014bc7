// vitest setupFiles (unit and e2e): makes every fast-check property replayable. FC_SEED (and FC_PATH, to go
// straight to the shrunk counterexample) fix what the properties generate; a failure starts with the line to
// replay it. A property that passes its own `seed` keeps it: that is how a seed that failed once stays a fixed case.
import path from 'node:path';
import fc from 'fast-check';

const seed = parseSeed(process.env.FC_SEED);
const replayPath = process.env.FC_PATH?.trim() || undefined;
if (replayPath !== undefined && seed === undefined) throw new Error('FC_PATH replays a counterexample of one seed: set FC_SEED too');
if (replayPath !== undefined && !/^\d+(:\d+)*$/.test(replayPath))
  throw new Error(`FC_PATH must look like 0:2:21 (fast-check's path), got ${JSON.stringify(replayPath)}`);

fc.configureGlobal({
  ...(seed !== undefined && { seed }),
  ...(replayPath !== undefined && { path: replayPath }),
  reporter: reportFailure,
});

function parseSeed(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`FC_SEED must be an integer (fast-check prints it as "seed: -371066249"), got ${JSON.stringify(value)}`);
  return n;
}

/** fast-check's own failure report, led by one line saying how to run exactly this failure again. */
function reportFailure(out: fc.RunDetails<unknown>): void {
  if (!out.failed) return;
  const { testPath, currentTestName } = expect.getState();
  const file = testPath ? path.relative(process.cwd(), testPath) : '<spec file>';
  // -t takes a regular expression: the test's own name, escaped, and quoted for a POSIX shell
  const name = currentTestName
    ?.split(' > ')
    .at(-1)
    ?.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/'/g, `'\\''`);
  const test = name ? ` -t '${name}'` : '';
  const replay = `FC_SEED=${out.seed}${out.counterexamplePath ? ` FC_PATH=${out.counterexamplePath}` : ''} npx vitest run ${file}${test}`;
  throw new Error(`Property failed (seed ${out.seed}); replay it with:\n  ${replay}\n\n${fc.defaultReportMessage(out)}`, { cause: out.errorInstance });
}
