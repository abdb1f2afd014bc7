import { ProblemError } from '@mp/platform';
import { AccountFlag, TransferFlag } from '@mp/ledger';
import { parseAccounts, parseTransfers } from './requests';

const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

function problem(fn: () => unknown): ProblemError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ProblemError) return error;
    throw error;
  }
  throw new Error('no problem raised');
}

describe('ledger request bodies', () => {
  it('turns flag names into TigerBeetle bits, amounts into bigint, assets and ids into their stored forms', () => {
    expect(
      parseTransfers(
        [
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
        ],
        10,
      ),
    ).toEqual([
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
    expect(parseAccounts([{ id: ID, asset: 'stripe/usd', code: 1, flags: ['debits_must_not_exceed_credits'] }], 10)).toEqual([
      { id: ID, asset: 'stripe/usd', code: 1, flags: AccountFlag.debits_must_not_exceed_credits },
    ]);
  });

  it('leaves rule violations to the rules: zero amounts and missing accounts are well formed', () => {
    expect(parseTransfers([{ id: ID, amount: '0' }], 10)).toEqual([{ id: ID, amount: 0n, flags: 0 }]);
  });

  it('names every malformed field, with a hint for negative amounts', () => {
    const error = problem(() => parseTransfers([{ id: ID, amount: '-3', flags: ['pendingg'], extra: 1 }], 10));
    expect(error.code).toBe('validation_failed');
    expect(error.extensions.invalidParams).toEqual([
      { name: '[0].amount', reason: expect.stringMatching(/must not be negative.*swap/) },
      { name: '[0].flags[0]', reason: expect.any(String) },
      { name: '[0].extra', reason: 'unknown member' },
    ]);
    expect(problem(() => parseTransfers([{ id: ID }, { id: ID }], 1)).extensions.invalidParams).toEqual([
      { name: '(body)', reason: 'must hold 1 to 1 transfers' },
    ]);
    expect(problem(() => parseTransfers({}, 10)).extensions.invalidParams).toEqual([{ name: '(body)', reason: 'must be a JSON array of transfers' }]);
    expect(problem(() => parseTransfers([{}], 10)).extensions.invalidParams).toEqual([{ name: '[0].id', reason: 'is required' }]);
  });
});
