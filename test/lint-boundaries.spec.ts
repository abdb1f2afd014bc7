import path from 'node:path';
import { ESLint } from 'eslint';

// The boundaries of issue 12, checked through ESLint's own API against the repository's eslint.config.mjs: each
// snippet is linted as if it lived at the given path, so the rules are proven to fire (and to stay quiet on the
// imports the tree really uses).
const repoRoot = path.resolve(__dirname, '..');
const boundaryRules = new Set(['boundaries/no-crossing', 'no-restricted-imports']);

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: repoRoot });
});

async function boundaryErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(repoRoot, filePath) });
  return result.messages
    .filter((message) => message.severity === 2 && message.ruleId !== null && boundaryRules.has(message.ruleId))
    .map((message) => `${message.ruleId}: ${message.message}`);
}

const importing = (specifier: string) => `import { thing } from '${specifier}';\nexport const used = thing;\n`;

describe('lint: no app imports another app', () => {
  it('refuses an app source file importing another app, however the path is spelt', async () => {
    expect(await boundaryErrors('apps/facilitator/src/settlement/x.ts', importing('../../../ledger/src/app.module'))).toEqual([
      expect.stringMatching(/^boundaries\/no-crossing: .*apps\/ledger\/src\/app\.module: an app never imports another app/),
    ]);
    expect(await boundaryErrors('apps/ledger/src/x.ts', importing('../../../apps/merchant-agent/src/merchant.config'))).toHaveLength(1);
    expect(await boundaryErrors('apps/merchant-agent/src/x.ts', `export * from '../../facilitator/src/app.module';\n`)).toHaveLength(1);
    expect(await boundaryErrors('apps/merchant-agent/src/x.ts', `export const load = () => import('../../facilitator/src/app.module');\n`)).toHaveLength(1);
    expect(
      await boundaryErrors(
        'apps/merchant-agent/src/x.ts',
        `import type { FacilitatorConfig } from '../../facilitator/src/config/facilitator.config';\nexport type C = FacilitatorConfig;\n`,
      ),
    ).toHaveLength(1);
  });

  it("refuses it in an app's tests too, and a test importing top-level specs rather than test/support", async () => {
    expect(await boundaryErrors('apps/facilitator/test/merchants.e2e-spec.ts', importing('../../merchant-agent/src/app.module'))).toHaveLength(1);
    expect(await boundaryErrors('apps/merchant-agent/test/a2a.e2e-spec.ts', importing('../../ledger/test/support/ledger-app'))).toHaveLength(1);
    expect(await boundaryErrors('apps/ledger/test/x.e2e-spec.ts', importing('../../../test/merchants.e2e-spec'))).toEqual([
      expect.stringMatching(/test\/merchants\.e2e-spec: an app's tests take shared helpers from test\/support only/),
    ]);
  });

  it('lets an app import itself (even a file named after another app), the libraries and test/support', async () => {
    expect(await boundaryErrors('apps/ledger/src/core/x.ts', importing('../ledger.config'))).toEqual([]);
    expect(await boundaryErrors('apps/facilitator/src/x.ts', importing('@mp/ledger'))).toEqual([]);
    expect(await boundaryErrors('apps/merchant-agent/test/x.e2e-spec.ts', importing('../../../test/support/ledger-app'))).toEqual([]);
    expect(await boundaryErrors('test/x.e2e-spec.ts', importing('../apps/merchant-agent/src/app.module'))).toEqual([]);
  });
});

describe('lint: the protocol, money and billing libraries import no rail and no framework', () => {
  const forbidden = [
    '@nestjs/common',
    '@prisma/client',
    'express',
    'express/lib/router',
    'stripe',
    'bullmq',
    'ioredis',
    '@mp/chain',
    '@mp/stripe',
    '@mp/db',
    '@mp/platform',
    '@mp/clients',
  ];

  it.each(['libs/x402/src/x.ts', 'libs/mpp/src/x.ts', 'libs/money/src/x.ts', 'libs/billing/src/x.ts'])(
    'refuses every rail and framework package in %s',
    async (file) => {
      for (const specifier of forbidden) {
        expect({ specifier, errors: await boundaryErrors(file, importing(specifier)) }).toEqual({
          specifier,
          errors: [expect.stringMatching(/no rail and no framework/)],
        });
      }
    },
  );

  it('refuses a rail library reached by a relative path', async () => {
    expect(await boundaryErrors('libs/mpp/src/methods/x.ts', importing('../../../chain/src/gas'))).toEqual([
      expect.stringMatching(/^boundaries\/no-crossing: .*libs\/chain\/src\/gas: the protocol and money libraries/),
    ]);
    expect(await boundaryErrors('libs/x402/src/x.ts', importing('../../platform/src'))).toHaveLength(1);
    expect(await boundaryErrors('libs/billing/src/x.ts', importing('../../db/src'))).toHaveLength(1);
  });

  it("lets x402 and mpp use viem's encoding helpers, but not a client, a transport or an account; money and billing not even those", async () => {
    expect(await boundaryErrors('libs/x402/src/x.ts', `import { isAddress, isHex } from 'viem';\nexport const ok = [isAddress, isHex];\n`)).toEqual([]);
    expect(
      await boundaryErrors('libs/mpp/src/x.ts', `import { createPublicClient, http } from 'viem';\nexport const no = [createPublicClient, http];\n`),
    ).toHaveLength(2);
    expect(await boundaryErrors('libs/mpp/src/x.ts', importing('viem/accounts'))).toHaveLength(1);
    expect(await boundaryErrors('libs/money/src/x.ts', `import { isAddress } from 'viem';\nexport const no = isAddress;\n`)).toHaveLength(1);
    expect(await boundaryErrors('libs/billing/src/x.ts', `import { isAddress } from 'viem';\nexport const no = isAddress;\n`)).toHaveLength(1);
    expect(await boundaryErrors('libs/billing/src/x.ts', importing('@mp/money'))).toEqual([]);
    expect(await boundaryErrors('libs/x402/src/x.ts', importing('@mp/money'))).toEqual([]);
  });
});

describe('lint: libraries never import apps', () => {
  it.each(['libs/ledger/src/x.ts', 'libs/platform/src/x.ts', 'libs/x402/src/x.ts', 'libs/billing/src/x.ts'])('refuses an app import in %s', async (file) => {
    expect(await boundaryErrors(file, importing('../../../apps/ledger/src/ledger.config'))).toEqual([expect.stringMatching(/libraries never import apps/)]);
  });
});
