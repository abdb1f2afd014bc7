import { ProblemError } from '@mp/platform';
import { AccountFlag, TransferFlag } from '@mp/ledger';
import type { LedgerConfig } from '../ledger.config';
import { AccountBatchPipe, TransferBatchPipe } from './requests';

const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const config = (batchMax: number) => ({ batchMax }) as LedgerConfig;
const transfers = (body: unknown, max = 10) => new TransferBatchPipe(config(max)).transform(body);
const accounts = (body: unknown, max = 10) => new AccountBatchPipe(config(max)).transform(body);

function problem(fn: () => unknown): ProblemError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ProblemError) return error;
    throw error;
  }
  throw new Error('no problem raised');
}

describe('ledger batch bodies (the zod parser)', () => {
  it('turns flag names into TigerBeetle bits, amounts into bigint, assets and ids into their stored forms', () => {
    expect(
      transfers([
        {
          id: '7',
          debitAccountId: ID.toUpperCase(),
          creditAccountId: ID,
          amount: '1500000',
          asset: 'eip155:8453/0xABC',
          code: 3,
          flags: ['pending', 'linked'],
          timeout: 30,
        },
      ]),
    ).toStrictEqual([
      {
        id: '00000000-0000-0000-0000-000000000007',
        debitAccountId: ID,
        creditAccountId: ID,
        amount: 1_500_000n,
        asset: 'eip155:8453/0xabc',
        code: 3,
        flags: TransferFlag.pending | TransferFlag.linked,
        timeout: 30,
      },
    ]);
    expect(accounts([{ id: ID, asset: 'stripe/usd', code: 1, flags: ['debits_must_not_exceed_credits'] }])).toStrictEqual([
      { id: ID, asset: 'stripe/usd', code: 1, flags: AccountFlag.debits_must_not_exceed_credits },
    ]);
  });

  it('leaves rule violations to the rules: zero amounts and missing accounts are well formed', () => {
    expect(transfers([{ id: ID, amount: '0' }])).toStrictEqual([{ id: ID, amount: 0n, flags: 0 }]);
  });

  it('names every malformed field by its item, with a hint for negative amounts', () => {
    const error = problem(() => transfers([{ id: ID }, { id: ID, amount: '-3', flags: ['pendingg'], extra: 1 }]));
    expect(error.code).toBe('validation_failed');
    expect(error.message).toBe('invalid field(s): [1].amount, [1].flags[0], [1].extra');
    expect(error.extensions.invalidParams).toEqual([
      { name: '[1].amount', reason: expect.stringMatching(/must not be negative.*swap/) },
      { name: '[1].flags[0]', reason: expect.stringMatching(/linked.*pending/) },
      { name: '[1].extra', reason: 'unknown member' },
    ]);
    expect(problem(() => transfers([{ id: ID, amount: 15 }])).extensions.invalidParams).toEqual([
      { name: '[0].amount', reason: 'must be a decimal string of atomic units, e.g. "1500000"' },
    ]);
    expect(problem(() => transfers([{ id: ID, amount: '1.5' }])).extensions.invalidParams).toEqual([
      { name: '[0].amount', reason: expect.stringMatching(/^must be a whole number of atomic units/) },
    ]);
  });

  it('refuses null for an optional member, a missing required one, and items that are not objects', () => {
    expect(problem(() => transfers([{ id: ID, amount: null }])).extensions.invalidParams).toEqual([
      { name: '[0].amount', reason: 'must be a decimal string of atomic units, e.g. "1500000"' },
    ]);
    expect(problem(() => transfers([{}])).extensions.invalidParams).toEqual([{ name: '[0].id', reason: 'is required' }]);
    expect(problem(() => accounts([{ id: ID, asset: 'stripe/usd' }, 3])).extensions.invalidParams).toEqual([
      { name: '[0].code', reason: 'is required' },
      { name: '[1]', reason: 'must be a JSON object' },
    ]);
  });

  it('refuses members that would reach the prototype chain: constructor and __proto__ as JSON sends them', () => {
    const names = (body: string) => problem(() => transfers(JSON.parse(body))).extensions.invalidParams?.map((p) => p.name);
    expect(names(`[{"id":"${ID}","constructor":{"name":"x"}}]`)).toEqual(['[0].constructor']);
    expect(names(`[{"id":"${ID}","__proto__":{"amount":"5"}}]`)).toEqual(['[0].__proto__']);
  });

  it('takes 1 to LEDGER_BATCH_MAX items in a JSON array', () => {
    expect(problem(() => transfers([{ id: ID }, { id: ID }], 1)).extensions.invalidParams).toEqual([{ name: '(body)', reason: 'must hold 1 to 1 transfers' }]);
    expect(problem(() => transfers([])).extensions.invalidParams).toEqual([{ name: '(body)', reason: 'must hold 1 to 10 transfers' }]);
    expect(problem(() => transfers({})).extensions.invalidParams).toEqual([{ name: '(body)', reason: 'must be a JSON array of transfers' }]);
  });

  it('names at most 50 fields however bad the batch', () => {
    const error = problem(() =>
      transfers(
        Array.from({ length: 100 }, () => ({ id: 'x', amount: 'y' })),
        100,
      ),
    );
    expect(error.extensions.invalidParams).toHaveLength(50);
  });
});
