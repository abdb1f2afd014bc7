import { AccountBatch } from './account-rules';
import { AccountFlag } from './flags';
import type { Account, AccountInput } from './model';

const id = (n: number) => `00000000-0000-0000-0000-${n.toString(16).padStart(12, '0')}`;
const input = (n: number, extra: Partial<AccountInput> = {}): AccountInput => ({ id: id(n), asset: 'stripe/usd', code: 1, flags: 0, ...extra });

describe('create_accounts rules', () => {
  const stored: Account = {
    ...input(1),
    normalBalance: 'credit',
    reference: 'wallet:1',
    debitsPending: 0n,
    debitsPosted: 0n,
    creditsPending: 0n,
    creditsPosted: 0n,
  };

  it('creates new accounts with zero balances and a normal side from the limit flag', () => {
    const batch = new AccountBatch([]);
    const results = batch.create([input(2), input(3, { flags: AccountFlag.credits_must_not_exceed_debits })]);
    expect(results).toEqual([{ result: 'created' }, { result: 'created' }]);
    expect(batch.created.map((a) => [a.id, a.normalBalance, a.creditsPosted])).toEqual([
      [id(2), 'credit', 0n],
      [id(3), 'debit', 0n],
    ]);
  });

  it('answers exists for the same account and names the first field that differs otherwise', () => {
    const batch = new AccountBatch([stored]);
    expect(
      batch
        .create([
          input(1, { reference: 'wallet:1' }),
          input(1, { reference: 'wallet:1', flags: AccountFlag.debits_must_not_exceed_credits }),
          input(1),
          input(1, { reference: 'wallet:1', asset: 'stripe/eur' }),
          input(1, { reference: 'wallet:1', code: 2 }),
          input(1, { reference: 'wallet:1', normalBalance: 'debit' }),
        ])
        .map((r) => r.result),
    ).toEqual([
      'exists',
      'exists_with_different_flags',
      'exists_with_different_reference',
      'exists_with_different_ledger',
      'exists_with_different_code',
      'exists_with_different_normal_balance',
    ]);
    expect(batch.created).toEqual([]);
  });

  it('refuses reserved ids, both limits at once and code 0', () => {
    const batch = new AccountBatch([]);
    const both = AccountFlag.debits_must_not_exceed_credits | AccountFlag.credits_must_not_exceed_debits;
    expect(
      batch
        .create([input(0), { ...input(0), id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' }, input(4, { flags: both }), input(5, { code: 0 })])
        .map((r) => r.result),
    ).toEqual(['id_must_not_be_zero', 'id_must_not_be_int_max', 'flags_are_mutually_exclusive', 'code_must_not_be_zero']);
  });

  it('creates a linked chain of accounts together or not at all', () => {
    const batch = new AccountBatch([]);
    const results = batch.create([input(6, { flags: AccountFlag.linked }), input(7, { code: 0 }), input(8)]);
    expect(results.map((r) => r.result)).toEqual(['linked_event_failed', 'code_must_not_be_zero', 'created']);
    expect(batch.created.map((a) => a.id)).toEqual([id(8)]);
  });
});
