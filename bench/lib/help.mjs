import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A bench script's --help: its header comment (after the shebang), however long it grows. */
export function headerComment(moduleUrl) {
  const lines = fs.readFileSync(fileURLToPath(moduleUrl), 'utf8').split('\n');
  const header = lines.slice(
    1,
    lines.findIndex((l, i) => i > 0 && !l.startsWith('//')),
  );
  return header.map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
}
