import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'libs/db/src/generated/**', 'contracts/out/**', '.local/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', fetch: 'readonly', performance: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', AbortController: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly', NodeJS: 'readonly', AbortSignal: 'readonly', WebAssembly: 'readonly' } },
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
    files: ['libs/money/**/*.ts', 'libs/x402/**/*.ts', 'libs/mpp/**/*.ts', 'libs/chain/**/*.ts', 'libs/stripe/**/*.ts', 'libs/ledger/**/*.ts', 'libs/reconciliation/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@nestjs/*', '@prisma/*', 'express', '@mp/db', '@mp/platform'], message: 'protocol, money and chain libraries import no Nest, Prisma or HTTP framework' }] }],
    },
  },
);
