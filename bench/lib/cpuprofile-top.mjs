// Summaries of a V8 .cpuprofile (node --cpu-prof) for the benches: the busy share, self time by package and by
// function, inclusive time of our own functions, and the folded stacks ("a;b;c <samples>", one line per stack) that
// flamegraph.pl and speedscope draw as a flame graph. Also runnable: node bench/lib/cpuprofile-top.mjs <file> [--since-ms N]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);

/** Which package (or our app/lib, or node itself) a frame's code belongs to. */
function ownerOf(url) {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node';
  const m = /\/(apps|libs)\/([^/]+)\//.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  return path.basename(url);
}

/**
 * `windows`: only samples within these [from, to] ms after the profile's start (e.g. one phase; default: all). Returns
 * shares of all samples in range (idle included), so `busy` is the process's CPU share of the wall time profiled.
 */
export function summarizeProfile(profile, { windows = [[0, Infinity]], top = 15 } = {}) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const frameName = (n) => {
    const { functionName, url, lineNumber } = n.callFrame;
    return `${functionName || '(anonymous)'} ${ownerOf(url)}${url && !url.includes('node_modules/') && lineNumber >= 0 ? `:${path.basename(url)}:${lineNumber + 1}` : ''}`;
  };
  const selfBy = new Map();
  const pkgBy = new Map();
  const oursInclusive = new Map();
  const folded = new Map();
  let total = 0;
  let idle = 0;
  let gc = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const at = (t - profile.startTime) / 1000;
    if (!windows.some(([from, to]) => at >= from && at <= to)) continue;
    const id = profile.samples[i];
    const node = nodes.get(id);
    total++;
    const name = node.callFrame.functionName;
    if (name === '(idle)' || name === '(program)') idle++;
    if (name === '(garbage collector)') gc++;
    if (IDLE.has(name) && name !== '(garbage collector)') continue;
    const self = frameName(node);
    selfBy.set(self, (selfBy.get(self) ?? 0) + 1);
    const pkg = name === '(garbage collector)' ? '(gc)' : ownerOf(node.callFrame.url);
    pkgBy.set(pkg, (pkgBy.get(pkg) ?? 0) + 1);
    const stack = [];
    const seenOurs = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const n = nodes.get(cur);
      if (n.callFrame.functionName === '(root)') break;
      const f = frameName(n);
      stack.push(f.replace(/;/g, ','));
      if (/^(apps|libs)\//.test(ownerOf(n.callFrame.url)) && !seenOurs.has(f)) {
        seenOurs.add(f);
        oursInclusive.set(f, (oursInclusive.get(f) ?? 0) + 1);
      }
    }
    const key = stack.reverse().join(';');
    folded.set(key, (folded.get(key) ?? 0) + 1);
  }
  const share = (n) => +((100 * n) / Math.max(1, total)).toFixed(1);
  const rank = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, n]) => ({ name, percent: share(n) }));
  return {
    samples: total,
    busyPercent: share(total - idle),
    gcPercent: share(gc),
    selfByPackage: rank(pkgBy),
    selfByFunction: rank(selfBy),
    oursInclusive: rank(oursInclusive),
    folded: [...folded].map(([k, n]) => `${k} ${n}`).join('\n') + '\n',
  };
}

export function formatProfile(label, s) {
  const list = (items) => items.map((i) => `    ${String(i.percent).padStart(5)} %  ${i.name}`).join('\n');
  return [
    `CPU profile, ${label}: ${s.samples} samples, busy ${s.busyPercent} % (GC ${s.gcPercent} %)`,
    '  self time by package:',
    list(s.selfByPackage),
    '  self time by function:',
    list(s.selfByFunction),
    '  our code, inclusive:',
    list(s.oursInclusive),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  const i = process.argv.indexOf('--since-ms');
  const sinceMs = i > 0 ? Number(process.argv[i + 1]) : 0;
  if (!file) {
    console.error('usage: node bench/lib/cpuprofile-top.mjs <file.cpuprofile> [--since-ms N]');
    process.exit(2);
  }
  const s = summarizeProfile(JSON.parse(fs.readFileSync(file, 'utf8')), { windows: [[sinceMs, Infinity]] });
  fs.writeFileSync(file.replace(/\.cpuprofile$/, '') + '.folded', s.folded);
  console.log(formatProfile(path.basename(file), s));
}
