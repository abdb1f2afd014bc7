import { postedBalance, summarize } from './balances';

describe('balances', () => {
  const b = { debitsPending: 5n, debitsPosted: 30n, creditsPending: 7n, creditsPosted: 100n };

  it('reads a credit-normal account: credits add, pending debits reduce what is available', () => {
    expect(summarize(b, 'credit')).toEqual({ posted: 70n, pending: 72n, available: 65n });
    expect(postedBalance('credit', 30n, 100n)).toBe(70n);
  });

  it('reads a debit-normal account the other way round', () => {
    expect(summarize(b, 'debit')).toEqual({ posted: -70n, pending: -72n, available: -77n });
    expect(postedBalance('debit', 30n, 100n)).toBe(-70n);
  });
});
