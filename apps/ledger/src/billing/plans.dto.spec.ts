import { problemValidationPipe, ProblemError } from '@mp/platform';
import { canonicalDecimal, differingTerms, usageComponentProblems } from './plan';
import { CreatePlanDto, PlanListQuery, planInputOf } from './plans.dto';

/** What the global pipe makes of a body or query string, or the problem it refuses it with. */
async function parse(value: unknown, metatype: new () => object, type: 'body' | 'query' = 'body') {
  return problemValidationPipe().transform(value, { type, metatype });
}

async function refusal(value: unknown, metatype: new () => object = CreatePlanDto, type: 'body' | 'query' = 'body') {
  const error = await parse(value, metatype, type).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  return { detail: (error as ProblemError).message, invalidParams: (error as ProblemError).extensions.invalidParams };
}

const USDC = 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const PLAN = {
  id: '5d0b3c58-3a57-4a7e-9d55-0c6f5f8f2b11',
  name: 'Pro monthly',
  product: 'pro',
  amount: '10000000',
  asset: USDC,
  periodUnit: 'month',
  periodCount: 1,
};

describe('CreatePlanDto through the global validation pipe', () => {
  it('takes a minimal plan, fills in the defaults and normalizes the id and asset', async () => {
    const body = (await parse({ ...PLAN, id: '7', asset: 'eip155:8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' }, CreatePlanDto)) as CreatePlanDto;
    expect(planInputOf(body)).toEqual({
      id: '00000000-0000-0000-0000-000000000007',
      name: 'Pro monthly',
      product: 'pro',
      amount: 10_000_000n,
      asset: USDC,
      periodUnit: 'month',
      periodCount: 1,
      trialDays: 0,
      endsAt: null,
      onDunningExhausted: 'canceled',
      cancelRefund: 'none',
      usage: [],
    });
  });

  it('keeps every optional term it is given', async () => {
    const body = (await parse(
      {
        ...PLAN,
        periodUnit: 'week',
        periodCount: 2,
        trialDays: 730,
        endsAt: '2027-12-31T00:00:00Z',
        onDunningExhausted: 'unpaid',
        cancelRefund: 'unused_part',
      },
      CreatePlanDto,
    )) as CreatePlanDto;
    expect(planInputOf(body)).toMatchObject({
      periodUnit: 'week',
      periodCount: 2,
      trialDays: 730,
      endsAt: new Date('2027-12-31T00:00:00Z'),
      onDunningExhausted: 'unpaid',
      cancelRefund: 'unused_part',
    });
  });

  it('requires every term without a default, naming each', async () => {
    expect(await refusal({})).toEqual({
      detail: 'invalid field(s): id, name, product, amount, asset, periodUnit, periodCount',
      invalidParams: ['id', 'name', 'product', 'amount', 'asset', 'periodUnit', 'periodCount'].map((name) => ({ name, reason: 'is required' })),
    });
  });

  it('refuses a zero, negative or fractional amount, and one that is not a string', async () => {
    expect((await refusal({ ...PLAN, amount: '0' })).invalidParams).toEqual([
      { name: 'amount', reason: 'must be greater than 0: a plan charges something each period' },
    ]);
    expect((await refusal({ ...PLAN, amount: '-5' })).invalidParams).toEqual([{ name: 'amount', reason: 'must be greater than 0' }]);
    expect((await refusal({ ...PLAN, amount: '1.5' })).invalidParams).toEqual([
      { name: 'amount', reason: 'must be a whole number of atomic units in decimal, e.g. "1500000" (no sign, decimal point or exponent; at most 2^256-1)' },
    ]);
    expect((await refusal({ ...PLAN, amount: 10 })).invalidParams).toEqual([
      { name: 'amount', reason: 'must be a decimal string of atomic units, e.g. "1500000"' },
    ]);
  });

  it('refuses a period that cannot be represented exactly, judging the count by its unit', async () => {
    const countReason = 'must be a whole number of periods, at most ten years of them: 3650 days, 520 weeks, 120 months';
    expect((await refusal({ ...PLAN, periodCount: 121 })).invalidParams).toEqual([{ name: 'periodCount', reason: countReason }]);
    expect((await refusal({ ...PLAN, periodCount: 1.5 })).invalidParams).toEqual([{ name: 'periodCount', reason: countReason }]);
    expect((await refusal({ ...PLAN, periodCount: 0 })).invalidParams).toEqual([{ name: 'periodCount', reason: countReason }]);
    expect((await refusal({ ...PLAN, periodCount: '1' })).invalidParams).toEqual([{ name: 'periodCount', reason: countReason }]);
    expect((await refusal({ ...PLAN, periodUnit: 'year', periodCount: 121 })).invalidParams).toEqual([
      { name: 'periodUnit', reason: 'must be one of day, week, month' },
    ]);
    expect(await parse({ ...PLAN, periodUnit: 'day', periodCount: 3650 }, CreatePlanDto)).toMatchObject({ periodCount: 3650 });
  });

  it('refuses bad optional terms and null for an absent one', async () => {
    expect(
      (await refusal({ ...PLAN, trialDays: 731, endsAt: 'next year', onDunningExhausted: 'deleted', cancelRefund: 'all', name: '', product: '-pro' }))
        .invalidParams,
    ).toEqual([
      { name: 'name', reason: 'must be a string of 1 to 200 characters' },
      { name: 'product', reason: 'must be 1 to 128 letters, digits or . _ : / -, starting with a letter or digit' },
      { name: 'trialDays', reason: 'must be a whole number of days from 0 to 730' },
      { name: 'endsAt', reason: 'must be an ISO 8601 date-time, e.g. 2026-12-01T00:00:00Z' },
      { name: 'onDunningExhausted', reason: 'must be one of canceled, unpaid' },
      { name: 'cancelRefund', reason: 'must be one of none, unused_part' },
    ]);
    expect((await refusal({ ...PLAN, trialDays: null })).invalidParams).toEqual([
      { name: 'trialDays', reason: 'must be a whole number of days from 0 to 730' },
    ]);
  });

  it('names unknown fields last, and refuses a body that is not an object', async () => {
    expect(await refusal({ ...PLAN, amount: '0', interval: 'month' })).toEqual({
      detail: 'invalid field(s): amount, interval',
      invalidParams: [
        { name: 'amount', reason: 'must be greater than 0: a plan charges something each period' },
        { name: 'interval', reason: 'unknown field' },
      ],
    });
    expect((await refusal([PLAN])).invalidParams).toEqual([{ name: '(body)', reason: 'must be a JSON object' }]);
  });
});

describe('PlanListQuery through the global validation pipe', () => {
  it('reads archived as a boolean and the page as numbers', async () => {
    expect(await parse({ product: 'pro', archived: 'false', limit: '2' }, PlanListQuery, 'query')).toEqual({ product: 'pro', archived: false, limit: 2 });
    expect(await parse({ archived: 'true' }, PlanListQuery, 'query')).toEqual({ archived: true });
  });

  it('refuses anything else for archived, and unknown parameters', async () => {
    expect(await refusal({ archived: 'yes', state: 'open' }, PlanListQuery, 'query')).toEqual({
      detail: 'invalid query parameter(s): archived, state',
      invalidParams: [
        { name: 'archived', reason: 'must be true or false' },
        { name: 'state', reason: 'unknown query parameter' },
      ],
    });
  });
});

describe('differingTerms', () => {
  const terms = {
    name: 'Pro monthly',
    product: 'pro',
    amount: 10_000_000n,
    asset: USDC,
    periodUnit: 'month' as const,
    periodCount: 1,
    trialDays: 0,
    endsAt: new Date('2027-01-01T00:00:00Z'),
    onDunningExhausted: 'canceled' as const,
    cancelRefund: 'none' as const,
    usage: [{ key: 'tokens', meterKey: 'llm-tokens', unitAmount: '0.5', description: null }],
  };

  it('finds none for the same terms, dates compared by instant', () => {
    expect(differingTerms(terms, { ...terms, endsAt: new Date('2027-01-01T00:00:00.000Z') })).toEqual([]);
  });

  it('names each term that differs, in the order of the plan', () => {
    expect(differingTerms(terms, { ...terms, cancelRefund: 'unused_part', amount: 10_000_001n, endsAt: null })).toEqual(['amount', 'endsAt', 'cancelRefund']);
  });

  it('compares usage components in order, prices as numbers', () => {
    expect(differingTerms(terms, { ...terms, usage: [{ ...terms.usage[0] }] })).toEqual([]);
    expect(differingTerms(terms, { ...terms, usage: [{ ...terms.usage[0], unitAmount: '0.6' }] })).toEqual(['usage']);
    expect(differingTerms(terms, { ...terms, usage: [] })).toEqual(['usage']);
    expect(differingTerms(terms, { ...terms, usage: [terms.usage[0], { ...terms.usage[0], key: 'b' }] })).toEqual(['usage']);
  });
});

describe('usage components', () => {
  const component = { key: 'tokens', meterKey: 'llm-tokens', unitAmount: '0.25' };

  it('are read with their price made canonical and the description defaulted to null', async () => {
    const body = (await parse(
      {
        ...PLAN,
        usage: [
          { ...component, unitAmount: '0.2500' },
          { ...component, key: 'b', unitAmount: '3', description: 'B' },
        ],
      },
      CreatePlanDto,
    )) as CreatePlanDto;
    expect(planInputOf(body).usage).toEqual([
      { key: 'tokens', meterKey: 'llm-tokens', unitAmount: '0.25', description: null },
      { key: 'b', meterKey: 'llm-tokens', unitAmount: '3', description: 'B' },
    ]);
    expect(canonicalDecimal('10.000')).toBe('10');
    expect(canonicalDecimal('0.0')).toBe('0');
  });

  it.each([
    ['0', 'usage.0.unitAmount', 'must be greater than 0'],
    ['0.000', 'usage.0.unitAmount', 'must be greater than 0'],
    ['-1', 'usage.0.unitAmount', 'must be a decimal string'],
    ['1e3', 'usage.0.unitAmount', 'must be a decimal string'],
    ['0.1234567890123456789', 'usage.0.unitAmount', 'must be a decimal string'],
  ])('refuse the price %s', async (unitAmount, name, reason) => {
    const { invalidParams } = await refusal({ ...PLAN, usage: [{ ...component, unitAmount }] });
    expect(invalidParams).toEqual([{ name, reason: expect.stringContaining(reason) }]);
  });

  it('refuse a number for a price, a missing meter key, an unknown member and more than 20 components', async () => {
    expect((await refusal({ ...PLAN, usage: [{ ...component, unitAmount: 1 }] })).invalidParams).toEqual([
      { name: 'usage.0.unitAmount', reason: expect.stringContaining('must be a decimal string') },
    ]);
    expect((await refusal({ ...PLAN, usage: [{ key: 'k', unitAmount: '1' }] })).invalidParams).toEqual([{ name: 'usage.0.meterKey', reason: 'is required' }]);
    expect((await refusal({ ...PLAN, usage: [{ ...component, price: '1' }] })).invalidParams).toEqual([{ name: 'usage.0.price', reason: 'unknown field' }]);
    expect((await refusal({ ...PLAN, usage: Array.from({ length: 21 }, (_, i) => ({ ...component, key: `k${i}` })) })).invalidParams).toEqual([
      { name: 'usage', reason: 'a plan carries at most 20 usage components' },
    ]);
  });

  it('are refused on a Stripe plan, with a key used twice, or with a meter the merchant lacks', () => {
    const usage = [
      { ...component, description: null },
      { ...component, meterKey: 'nope', description: null },
    ];
    expect(usageComponentProblems({ asset: 'stripe/usd', usage }, () => true)).toEqual([
      { name: 'usage', reason: expect.any(String), reasonCode: 'usage_not_supported_on_stripe' },
    ]);
    expect(usageComponentProblems({ asset: USDC, usage }, (key) => key === 'llm-tokens')).toEqual([
      { name: 'usage.1.key', reason: expect.any(String), reasonCode: 'duplicate_component_key' },
      { name: 'usage.1.meterKey', reason: expect.any(String), reasonCode: 'meter_not_found' },
    ]);
    expect(usageComponentProblems({ asset: 'stripe/usd', usage: [] }, () => false)).toEqual([]);
  });
});
