// Compiles contracts/*.sol with solc-js (OpenZeppelin imports resolved from node_modules) and caches the
// artifacts in contracts/out/, keyed by a hash of the sources, the solc version and the compiler settings.
// A cache hit costs a few milliseconds; a miss (solc-js is emscripten) costs ~2.5 s.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CONTRACTS_DIR = path.join(REPO_ROOT, 'contracts');
export const OUT_DIR = path.join(CONTRACTS_DIR, 'out');

/** Contracts the deploy script needs, by name (each lives in contracts/<Name>.sol). */
export const CONTRACT_NAMES = Object.freeze([
  'MockUSDC',
  'MisreportingUSDC',
  'PlainToken',
  'SmartWallet',
  'SmartWalletFactory',
  'Multicall3',
  'Permit2',
  'X402UptoPermit2Proxy',
  'EvmPaymentChannelEscrow',
  'X402BatchSettlement',
  'ERC3009DepositCollector',
]);

const SETTINGS = Object.freeze({
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: {
    '*': {
      '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'],
      MisreportingUSDC: ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object', 'storageLayout'],
    },
  },
});

function readSources() {
  const files = fs
    .readdirSync(CONTRACTS_DIR)
    .filter((f) => f.endsWith('.sol'))
    .sort();
  return Object.fromEntries(files.map((f) => [f, { content: fs.readFileSync(path.join(CONTRACTS_DIR, f), 'utf8') }]));
}

function packageVersion(name) {
  return JSON.parse(fs.readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
}

function cacheKey(sources) {
  const h = createHash('sha256');
  h.update(`solc@${packageVersion('solc')}\n`);
  h.update(`@openzeppelin/contracts@${packageVersion('@openzeppelin/contracts')}\n`);
  h.update(JSON.stringify(SETTINGS));
  for (const [name, { content }] of Object.entries(sources)) h.update(`\n--${name}--\n${content}`);
  return h.digest('hex').slice(0, 16);
}

function findImport(importPath) {
  try {
    if (importPath.startsWith('@')) return { contents: fs.readFileSync(require.resolve(importPath), 'utf8') };
    const local = path.join(CONTRACTS_DIR, importPath);
    if (local.startsWith(CONTRACTS_DIR + path.sep) && fs.existsSync(local)) {
      return { contents: fs.readFileSync(local, 'utf8') };
    }
    return { error: `File not found: ${importPath}` };
  } catch (err) {
    return { error: `Cannot resolve ${importPath}: ${err.message}` };
  }
}

function runSolc(sources) {
  const solc = require('solc');
  const input = { language: 'Solidity', sources, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(`Solidity compilation failed:\n${errors.map((e) => e.formattedMessage ?? e.message).join('\n')}`);
  }
  const warnings = (output.errors ?? []).filter((e) => e.severity !== 'error');
  const artifacts = {};
  for (const [file, contracts] of Object.entries(output.contracts ?? {})) {
    if (!(file in sources)) continue; // skip library sources (OpenZeppelin)
    for (const [name, c] of Object.entries(contracts)) {
      artifacts[name] = {
        sourceName: file,
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      };
    }
  }
  // MisreportingUSDC writes OpenZeppelin ERC20's private `_balances` mapping directly at slot 0: make sure it's there.
  const layout = output.contracts['MisreportingUSDC.sol']?.MisreportingUSDC?.storageLayout?.storage ?? [];
  const balances = layout.find((s) => s.label === '_balances');
  if (!balances || balances.slot !== '0') {
    throw new Error(`MisreportingUSDC expects ERC20._balances at slot 0, solc says ${balances?.slot ?? 'absent'}`);
  }
  for (const name of CONTRACT_NAMES) {
    if (!artifacts[name]) throw new Error(`Compilation produced no artifact for ${name}`);
  }
  return { artifacts, warnings: warnings.map((w) => w.formattedMessage ?? w.message) };
}

/**
 * Compile (or load cached) artifacts.
 * @param {{ force?: boolean, log?: (msg: string) => void }} [opts]
 * @returns {{ key: string, cached: boolean, ms: number, artifacts: Record<string, { sourceName: string, abi: any[], bytecode: `0x${string}`, deployedBytecode: `0x${string}` }> }}
 */
export function compileContracts({ force = false, log = () => {} } = {}) {
  const t0 = performance.now();
  const sources = readSources();
  const key = cacheKey(sources);
  const file = path.join(OUT_DIR, `artifacts-${key}.json`);
  if (!force && fs.existsSync(file)) {
    try {
      const cached = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (cached.key === key && CONTRACT_NAMES.every((n) => cached.artifacts?.[n]?.bytecode)) {
        return { key, cached: true, ms: performance.now() - t0, artifacts: cached.artifacts };
      }
    } catch {
      // corrupt cache: recompile below
    }
  }
  const { artifacts, warnings } = runSolc(sources);
  for (const w of warnings) log(w);
  fs.mkdirSync(OUT_DIR, { recursive: true });
  // Write atomically: the chain CLI and the test setup may compile at the same time.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify({ key, solc: packageVersion('solc'), artifacts }, null, 1));
  fs.renameSync(tmp, file);
  for (const old of fs.readdirSync(OUT_DIR)) {
    if (old.startsWith('artifacts-') && old.endsWith('.json') && old !== path.basename(file)) {
      fs.rmSync(path.join(OUT_DIR, old), { force: true });
    }
  }
  return { key, cached: false, ms: performance.now() - t0, artifacts };
}
