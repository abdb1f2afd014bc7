import path from 'node:path';
import { fileURLToPath } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const repoRoot = path.dirname(fileURLToPath(import.meta.url));
const apps = ['facilitator', 'ledger', 'merchant-agent'];

/**
 * Where an import lands, as a path from the repository root: a relative specifier is resolved against the importing
 * file (so `../../ledger/src/x` is judged by where it points, not by how it is spelt) and `@mp/<name>` is
 * `libs/<name>/src`. A package import answers null: `no-restricted-imports` judges those by name.
 */
function importTarget(filename, specifier) {
  if (specifier.startsWith('.'))
    return path
      .relative(repoRoot, path.resolve(path.dirname(filename), specifier))
      .split(path.sep)
      .join('/');
  const alias = /^@mp\/([^/]+)(\/.*)?$/.exec(specifier);
  return alias ? `libs/${alias[1]}/src${alias[2] ?? ''}` : null;
}

const inside = (target, folder) => target === folder || target.startsWith(`${folder}/`);

/**
 * boundaries/no-crossing: each zone forbids imports landing in `folders` (unless they land in one of `except`).
 * Unlike no-restricted-imports' patterns it resolves relative paths, and it also sees export-from, import() and
 * require().
 */
const noCrossing = {
  meta: { type: 'problem', schema: [{ type: 'array' }], messages: { crossing: '{{specifier}} lands in {{target}}: {{reason}}' } },
  create(context) {
    const zones = context.options[0] ?? [];
    const check = (node) => {
      if (!node || node.type !== 'Literal' || typeof node.value !== 'string') return;
      const target = importTarget(context.filename, node.value);
      if (target === null) return;
      for (const zone of zones) {
        if (zone.folders.some((folder) => inside(target, folder)) && !(zone.except ?? []).some((folder) => inside(target, folder))) {
          context.report({ node, messageId: 'crossing', data: { specifier: node.value, target, reason: zone.reason } });
          return;
        }
      }
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
      TSExternalModuleReference: (node) => check(node.expression),
      CallExpression: (node) => node.callee.type === 'Identifier' && node.callee.name === 'require' && check(node.arguments[0]),
    };
  },
};

const noOtherApp = (app) => ({
  folders: ['apps'],
  except: [`apps/${app}`],
  reason: 'an app never imports another app; a spec that needs two apps belongs under test/ and starts them through test/support',
});
const onlyTestSupport = { folders: ['test'], except: ['test/support'], reason: "an app's tests take shared helpers from test/support only" };
const noApps = { folders: ['apps'], reason: 'libraries never import apps' };
const railLibs = ['chain', 'stripe', 'db', 'platform', 'clients'];
const noRailLib = {
  folders: railLibs.map((lib) => `libs/${lib}`),
  reason: 'the protocol and money libraries import no rail and no framework (ARCHITECTURE.md §3)',
};

// Packages the protocol and money libraries never import (the rail libraries, @mp/chain and the rest, are refused by
// boundaries/no-crossing above, which also sees relative paths). Exact names rather than a gitignore-style 'stripe',
// which would also match '@mp/stripe'. viem is allowed in libs/x402 (isAddress, isHex) and libs/mpp (checksummed
// addresses, keccak256 for the evm-charge challenge): those are pure encoding helpers in use today; what would make
// viem a rail is a client, a transport or an account, so those names and viem's subpaths are refused instead.
const frameworkMessage = 'the protocol and money libraries import no rail and no framework (ARCHITECTURE.md §3)';
const frameworkNames = ['express', 'stripe', 'bullmq', 'ioredis'];
const frameworkPaths = frameworkNames.map((name) => ({ name, message: frameworkMessage }));
const frameworkPatterns = [
  { group: ['@nestjs/*', '@prisma/*'], message: frameworkMessage },
  { regex: `^(${frameworkNames.join('|')})/`, message: frameworkMessage },
];
const protocolViemRule = {
  name: 'viem',
  importNames: ['createClient', 'createPublicClient', 'createWalletClient', 'createTestClient', 'http', 'webSocket', 'fallback', 'custom', 'ipc'],
  message: 'the protocol libraries use viem for encoding and address checks only; talking to a chain is a rail (@mp/chain)',
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'libs/db/src/generated/**', 'contracts/out/**', '.local/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        AbortController: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
        NodeJS: 'readonly',
        AbortSignal: 'readonly',
        WebAssembly: 'readonly',
      },
    },
    plugins: { boundaries: { rules: { 'no-crossing': noCrossing } } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      // Protocol and money libraries stay framework-free (ARCHITECTURE.md §3).
      'no-restricted-imports': 'off',
      // Rethrowing with a clearer message where the cause adds nothing for the operator is deliberate.
      'preserve-caught-error': 'off',
    },
  },
  {
    files: [
      'libs/money/**/*.ts',
      'libs/billing/**/*.ts',
      'libs/channels/**/*.ts',
      'libs/x402/**/*.ts',
      'libs/mpp/**/*.ts',
      'libs/chain/**/*.ts',
      'libs/stripe/**/*.ts',
      'libs/ledger/**/*.ts',
      'libs/reconciliation/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*', '@prisma/*', 'express', '@mp/db', '@mp/platform'],
              message: 'protocol, money and chain libraries import no Nest, Prisma or HTTP framework',
            },
          ],
        },
      ],
    },
  },
  // The boundaries (issue 12). For one rule, the last block matching a file wins, so each block below carries every
  // zone that applies to its files.
  ...apps.flatMap((app) => [
    { files: [`apps/${app}/**`], rules: { 'boundaries/no-crossing': ['error', [noOtherApp(app)]] } },
    { files: [`apps/${app}/test/**`], rules: { 'boundaries/no-crossing': ['error', [noOtherApp(app), onlyTestSupport]] } },
  ]),
  { files: ['libs/**'], rules: { 'boundaries/no-crossing': ['error', [noApps]] } },
  {
    files: ['libs/x402/**', 'libs/mpp/**', 'libs/money/**', 'libs/billing/**', 'libs/channels/**'],
    rules: {
      'boundaries/no-crossing': ['error', [noApps, noRailLib]],
      'no-restricted-imports': [
        'error',
        { paths: [...frameworkPaths, protocolViemRule], patterns: [...frameworkPatterns, { group: ['viem/*'], message: protocolViemRule.message }] },
      ],
    },
  },
  {
    // libs/money is below the protocols, and libs/billing is calendar and bigint arithmetic: not even viem's encoding helpers.
    files: ['libs/money/**', 'libs/billing/**', 'libs/channels/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: frameworkPaths, patterns: [...frameworkPatterns, { group: ['viem', 'viem/*'], message: frameworkMessage }] }],
    },
  },
);
