import { fileURLToPath } from 'node:url';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const lib = (name: string) => fileURLToPath(new URL(`./libs/${name}/src`, import.meta.url));

const alias = {
  '@mp/money': lib('money'),
  '@mp/billing': lib('billing'),
  '@mp/channels': lib('channels'),
  '@mp/x402': lib('x402'),
  '@mp/mpp': lib('mpp'),
  '@mp/chain': lib('chain'),
  '@mp/platform': lib('platform'),
  '@mp/db': lib('db'),
  '@mp/clients': lib('clients'),
  '@mp/stripe': lib('stripe'),
  '@mp/ledger': lib('ledger'),
  '@mp/reconciliation': lib('reconciliation'),
};

// SWC keeps Nest's decorator metadata exact; unit specs run in parallel, anything that touches the
// shared anvil signer or database runs as an e2e spec, one file at a time.
const plugins = [
  swc.vite({
    module: { type: 'es6' },
    jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true } },
  }),
];

export default defineConfig({
  plugins,
  resolve: { alias },
  test: {
    globals: true,
    pool: 'forks',
    projects: [
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'unit',
          globals: true,
          include: ['apps/**/*.spec.ts', 'libs/**/*.spec.ts', 'test/**/*.spec.ts'],
          testTimeout: 20_000,
          setupFiles: ['test/fast-check-setup.ts'],
        },
      },
      {
        plugins,
        resolve: { alias },
        test: {
          name: 'e2e',
          globals: true,
          include: ['apps/**/*.e2e-spec.ts', 'libs/**/*.e2e-spec.ts', 'test/**/*.e2e-spec.ts'],
          globalSetup: ['test/global-setup.ts'],
          setupFiles: ['test/fast-check-setup.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
