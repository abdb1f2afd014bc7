/**
 * Crash points: named places in a multi-step write where a process may die (after a record, before a broadcast…).
 * The crash tests set CRASH_POINTS=name@n[,name@n…] on a spawned process to have it SIGKILL itself the n-th time it
 * passes `name`, so every step is proven to be resumable where it really happens, not only after a random sleep.
 * Unset (always, outside those tests), a crash point is one map lookup.
 */
const armed = parse(process.env.CRASH_POINTS);

function parse(spec: string | undefined): Map<string, number> {
  const points = new Map<string, number>();
  for (const entry of (spec ?? '').split(',').filter(Boolean)) {
    const [name, count] = entry.split('@');
    const n = Number(count ?? 1);
    if (!name || !Number.isInteger(n) || n < 1) throw new Error(`CRASH_POINTS: "${entry}" is not name@count`);
    points.set(name.trim(), n);
  }
  return points;
}

export function crashPoint(name: string): void {
  const left = armed.get(name);
  if (left === undefined) return;
  if (left > 1) {
    armed.set(name, left - 1);
    return;
  }
  process.kill(process.pid, 'SIGKILL');
}
