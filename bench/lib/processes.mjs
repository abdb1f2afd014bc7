// What the benches share about the processes they start: the built apps as children stopped on exit, Ctrl-C and
// errors, and the CPU they and the machine use, read from /proc (Linux).
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The children a bench starts (and its anvil, once set): `cleanup()` stops them all; exiting the process, Ctrl-C and
 * SIGTERM do too. `start` spawns one with its output in `log` and waits until `readyUrl` answers 2xx (sent with
 * `readyHeaders`: the fake Stripe answers only an authenticated request).
 */
export function childProcesses({ cwd }) {
  const children = new Set();
  const processes = {
    anvil: undefined,
    async cleanup() {
      for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.all([...children].map((child) => (child.exitCode === null ? new Promise((r) => child.once('exit', r)) : undefined)));
      await processes.anvil?.stop().catch(() => {});
    },
    async start({ label, args, env, log, readyUrl, readyHeaders = {} }) {
      const out = fs.openSync(log, 'a');
      const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
      fs.closeSync(out);
      children.add(child);
      child.once('exit', () => children.delete(child));
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
        if (child.exitCode !== null) throw new Error(`${label} exited before it was ready; see ${log}`);
        if (
          await fetch(readyUrl, { headers: readyHeaders }).then(
            (r) => r.ok,
            () => false,
          )
        )
          return child;
      }
      throw new Error(`${label} did not answer ${readyUrl} within 60 s; see ${log}`);
    },
  };
  process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => processes.cleanup().finally(() => process.exit(130)));
  return processes;
}

/** The machine's busy and total CPU time so far, from /proc/stat (Linux; null elsewhere). */
export function machineCpu() {
  try {
    const v = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: v[3] + v[4], total: v.reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/** The fraction of the machine's CPU time that was busy between two machineCpu() readings. */
export const busyFraction = (a, b) => (a && b ? +(1 - (b.idle - a.idle) / (b.total - a.total)).toFixed(2) : null);

/** CPU seconds a process has used, from /proc (Linux; null elsewhere). */
export function cpuSeconds(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * CPU seconds used so far by every live process whose command name is one of `names` (PostgreSQL's backends, Redis,
 * anvil), from /proc (Linux; null elsewhere), with what their exited children used: PostgreSQL's postmaster reaps the
 * backends that end during a run, and their CPU moves into its children's time, so a difference of two readings holds
 * it either way.
 */
export function cpuSecondsOf(names) {
  try {
    let total = 0;
    for (const pid of fs.readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d))) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (!names.some((n) => comm.startsWith(n))) continue;
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        // utime, stime, then cutime, cstime: the children it has waited for
        total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
      } catch {
        // gone meanwhile
      }
    }
    return total;
  } catch {
    return null;
  }
}
