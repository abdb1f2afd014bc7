/**
 * A strict reader for the YAML this repository writes (docker/observability/*.yml): block mappings with plain keys,
 * block sequences (also `- key: value` items), `|` and `>` block scalars, double- and single-quoted scalars, plain
 * scalars (numbers, booleans, null, strings) and flow sequences of scalars, with `#` comments. Anything outside
 * that subset throws with its line number, so a file the reader does not understand fails its test instead of
 * being read wrongly. (No YAML library is a dependency; this covers what the files need.)
 */
export function parseYamlSubset(text: string): unknown {
  const reader = new Reader(text);
  const value = reader.node(0);
  reader.expectEnd();
  return value;
}

interface Line {
  indent: number;
  text: string;
  no: number;
}

const KEY = /^([A-Za-z_][\w.\-/]*)\s*:(?:\s+(.*))?$/;
const NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

class Reader {
  private readonly lines: Line[];
  private index = 0;

  constructor(text: string) {
    this.lines = text.split('\n').map((raw, i) => {
      const body = raw.replace(/\r$/, '');
      const indent = body.length - body.trimStart().length;
      if (/^\s*\t/.test(body)) throw this.error(i + 1, 'tab in indentation');
      return { indent, text: body.trim(), no: i + 1 };
    });
  }

  node(minIndent: number): unknown {
    const line = this.peek();
    if (!line || line.indent < minIndent) return null;
    return isSequenceItem(line.text) ? this.sequence(line.indent) : this.mapping(line.indent);
  }

  expectEnd(): void {
    const line = this.peek();
    if (line) throw this.error(line.no, `unexpected content: ${line.text}`);
  }

  private sequence(indent: number): unknown[] {
    const items: unknown[] = [];
    for (let line = this.peek(); line && line.indent === indent && isSequenceItem(line.text); line = this.peek()) {
      const rest = line.text.slice(1).trimStart();
      if (rest === '') {
        this.index++;
        items.push(this.node(indent + 1));
      } else if (KEY.test(rest)) {
        // `- key: value`: a mapping whose first line starts where `key` starts.
        this.lines[this.index] = { indent: indent + (line.text.length - rest.length), text: rest, no: line.no };
        items.push(this.mapping(this.lines[this.index].indent));
      } else {
        this.index++;
        items.push(this.scalarOrBlock(rest, indent, line.no));
      }
    }
    this.noDeeper(indent);
    return items;
  }

  private mapping(indent: number): Record<string, unknown> {
    const result: Record<string, unknown> = {};
    for (let line = this.peek(); line && line.indent === indent && !isSequenceItem(line.text); line = this.peek()) {
      const match = KEY.exec(line.text);
      if (!match) throw this.error(line.no, `not a "key: value" line: ${line.text}`);
      const [, key, raw] = match;
      if (Object.hasOwn(result, key)) throw this.error(line.no, `duplicate key ${key}`);
      this.index++;
      const value = raw === undefined ? '' : stripComment(raw);
      if (value === '') {
        const next = this.peek();
        if (next && next.indent > indent) result[key] = this.node(indent + 1);
        else if (next && next.indent === indent && isSequenceItem(next.text)) result[key] = this.sequence(indent);
        else result[key] = null;
      } else {
        result[key] = this.scalarOrBlock(value, indent, line.no);
      }
    }
    this.noDeeper(indent);
    return result;
  }

  private scalarOrBlock(value: string, parentIndent: number, no: number): unknown {
    const block = /^([|>])([-+]?)$/.exec(value);
    return block ? this.blockScalar(block[1] as '|' | '>', block[2], parentIndent, no) : scalar(value, (reason) => this.error(no, reason));
  }

  /** The lines indented deeper than the parent, kept verbatim past the block's own indentation. */
  private blockScalar(style: '|' | '>', chomping: string, parentIndent: number, no: number): string {
    const body: string[] = [];
    let blockIndent: number | undefined;
    while (this.index < this.lines.length) {
      const line = this.lines[this.index];
      if (line.text === '') {
        body.push('');
        this.index++;
        continue;
      }
      if (line.indent <= parentIndent) break;
      blockIndent ??= line.indent;
      if (line.indent < blockIndent) throw this.error(line.no, 'block scalar line indented less than its first line');
      body.push(' '.repeat(line.indent - blockIndent) + line.text);
      this.index++;
    }
    if (blockIndent === undefined) throw this.error(no, 'empty block scalar');
    while (body.length && body[body.length - 1] === '') body.pop();
    const text =
      style === '|'
        ? body.join('\n')
        : body
            .map((l) => (l === '' ? '\n' : l))
            .join(' ')
            .replace(/ ?\n ?/g, '\n');
    return chomping === '-' ? text : `${text}\n`;
  }

  private noDeeper(indent: number): void {
    const line = this.peek();
    if (line && line.indent > indent) throw this.error(line.no, `unexpected indentation: ${line.text}`);
  }

  /** The next line that is neither blank nor a comment. */
  private peek(): Line | undefined {
    while (this.index < this.lines.length && (this.lines[this.index].text === '' || this.lines[this.index].text.startsWith('#'))) this.index++;
    return this.lines[this.index];
  }

  private error(no: number, reason: string): Error {
    return new Error(`YAML line ${no}: ${reason}`);
  }
}

function isSequenceItem(text: string): boolean {
  return text === '-' || text.startsWith('- ');
}

/** A plain value without its ` # comment`; quoted values are returned whole (a `#` inside quotes is text). */
function stripComment(value: string): string {
  if (value.startsWith('"') || value.startsWith("'") || value.startsWith('[')) return value.trim();
  const hash = value.search(/\s#/);
  return (hash < 0 ? value : value.slice(0, hash)).trim();
}

function scalar(value: string, fail: (reason: string) => Error): unknown {
  const double = /^"((?:[^"\\]|\\.)*)"\s*(?:#.*)?$/.exec(value);
  if (double) return JSON.parse(`"${double[1]}"`);
  const single = /^'((?:[^']|'')*)'\s*(?:#.*)?$/.exec(value);
  if (single) return single[1].replace(/''/g, "'");
  if (value.startsWith('"') || value.startsWith("'")) throw fail(`unterminated quoted scalar: ${value}`);
  const flow = /^\[(.*)\]\s*(?:#.*)?$/.exec(value);
  if (flow) {
    const inner = flow[1].trim();
    if (inner === '') return [];
    const items = [...inner.matchAll(/\s*("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,"']+?)\s*(,|$)/gy)];
    const consumed = items.reduce((n, m) => n + m[0].length, 0);
    if (consumed !== inner.length || items.at(-1)?.[2] !== '') throw fail(`unsupported flow sequence: ${value}`);
    return items.map((item) => scalar(item[1], fail));
  }
  if (/^[[\]{}&*!%@`?|>,]/.test(value)) throw fail(`unsupported YAML: ${value}`);
  if (/:\s/.test(value) || value.endsWith(':')) throw fail(`a plain scalar with ": " (quote it): ${value}`);
  if (NUMBER.test(value)) return Number(value);
  if (value === 'true' || value === 'false') return value === 'true';
  if (value === 'null' || value === '~') return null;
  return value;
}
