import fc from 'fast-check';
import { ProblemError } from '@mp/platform';
import { AccountFlag, TRANSFER_FLAG_NAMES, TransferFlag } from '@mp/ledger';
import { mutated } from '../../../../test/support/mutations';
import type { LedgerConfig } from '../ledger.config';
import { AccountBatchPipe, parseTransfersBySchema, TransferBatchPipe, wellFormedTransfers } from './requests';

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

describe('ledger transfer batches checked by hand', () => {
  const id = fc.oneof(
    fc.uuid().map((u) => u.toUpperCase()),
    fc.uuid(),
    fc.bigInt({ min: 0n, max: 2n ** 128n - 1n }).map(String),
  );
  const transfer = fc.record(
    {
      id,
      debitAccountId: id,
      creditAccountId: id,
      amount: fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }).map(String),
      pendingId: id,
      asset: fc.constantFrom('stripe/usd', 'eip155:8453/0xABCdef', 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'),
      code: fc.integer({ min: 0, max: 65_535 }),
      flags: fc.array(fc.constantFrom(...TRANSFER_FLAG_NAMES), { maxLength: TRANSFER_FLAG_NAMES.length }),
      timeout: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      reference: fc.string({ minLength: 1, maxLength: 256 }),
    },
    { requiredKeys: ['id'], noNullPrototype: true },
  );
  const batch = fc.array(transfer, { minLength: 1, maxLength: 4 });
  const bySchema = (body: unknown) => {
    try {
      return parseTransfersBySchema(body, 10);
    } catch (error) {
      if (error instanceof ProblemError) return 'refused';
      throw error;
    }
  };

  it('takes valid batches, as the schema gives them', () => {
    fc.assert(
      fc.property(batch, (body) => {
        const taken = wellFormedTransfers(body, 10);
        expect(taken).toBeDefined();
        expect(taken).toStrictEqual(bySchema(body));
      }),
      { numRuns: 500 },
    );
  });

  it('never takes what the schema refuses, never gives other inputs than it', () => {
    fc.assert(
      fc.property(mutated(batch), (body) => {
        const taken = wellFormedTransfers(body, 10);
        if (taken !== undefined) expect(taken).toStrictEqual(bySchema(body));
      }),
      { numRuns: 2000 },
    );
    expect(wellFormedTransfers([], 10)).toBeUndefined();
    expect(
      wellFormedTransfers(
        Array.from({ length: 11 }, () => ({ id: ID })),
        10,
      ),
    ).toBeUndefined();
  });
});
