import { problemValidationPipe, ProblemError } from '@mp/platform';
import { AccountListQuery, LedgerIdPath, StatementQuery, TransferListQuery } from './queries.dto';

/** What the global pipe makes of a query string or path, or the problem it refuses it with. */
async function parse(value: Record<string, unknown>, metatype: new () => object, type: 'query' | 'param' = 'query') {
  return problemValidationPipe().transform(value, { type, metatype });
}

async function refusal(value: Record<string, unknown>, metatype: new () => object, type: 'query' | 'param' = 'query') {
  const error = await parse(value, metatype, type).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  return { detail: (error as ProblemError).message, invalidParams: (error as ProblemError).extensions.invalidParams };
}

describe('ledger query and path DTOs through the global validation pipe', () => {
  it('turns query numbers into numbers and normalizes ids and assets', async () => {
    expect(await parse({ status: 'pending', code: '7', limit: '20' }, TransferListQuery)).toEqual({ status: 'pending', code: 7, limit: 20 });
    expect(await parse({ asset: 'eip155:8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', code: '0' }, AccountListQuery)).toEqual({
      asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
      code: 0,
    });
    expect(await parse({ id: '1' }, LedgerIdPath, 'param')).toEqual({ id: '00000000-0000-0000-0000-000000000001' });
  });

  it('names an unknown parameter as such', async () => {
    expect(await refusal({ colour: 'red' }, TransferListQuery)).toEqual({
      detail: 'invalid query parameter(s): colour',
      invalidParams: [{ name: 'colour', reason: 'unknown query parameter' }],
    });
  });

  it('names each parameter of the wrong type or range with its reason, unknown ones last', async () => {
    expect(await refusal({ limit: '1001', code: 'seven', asset: 'USD', extra: '1' }, AccountListQuery)).toEqual({
      detail: 'invalid query parameter(s): asset, code, limit, extra',
      invalidParams: [
        { name: 'asset', reason: expect.stringMatching(/^must be an asset such as/) },
        { name: 'code', reason: 'must be an integer from 0 to 65535' },
        { name: 'limit', reason: 'must be an integer from 1 to 1000' },
        { name: 'extra', reason: 'unknown query parameter' },
      ],
    });
    expect((await refusal({ limit: '0' }, TransferListQuery)).invalidParams).toEqual([{ name: 'limit', reason: 'must be an integer from 1 to 1000' }]);
    expect((await refusal({ limit: ['1', '2'] }, TransferListQuery)).invalidParams).toEqual([{ name: 'limit', reason: 'must be an integer from 1 to 1000' }]);
    expect((await refusal({ id: 'x' }, LedgerIdPath, 'param')).invalidParams).toEqual([
      { name: 'id', reason: 'must be a UUID or a 128-bit unsigned integer in decimal' },
    ]);
  });

  it("refuses a reversed period and a date that is not ISO 8601, and requires the statement's account", async () => {
    expect((await refusal({ from: '2026-12-02T00:00:00Z', to: '2026-12-01T00:00:00Z' }, TransferListQuery)).invalidParams).toEqual([
      { name: 'to', reason: 'must not be before from' },
    ]);
    expect((await refusal({ from: 'yesterday' }, TransferListQuery)).invalidParams).toEqual([
      { name: 'from', reason: 'must be an ISO 8601 date-time, e.g. 2026-12-01T00:00:00Z' },
    ]);
    expect((await refusal({}, StatementQuery)).invalidParams).toEqual([{ name: 'account', reason: 'is required' }]);
    expect(await parse({ account: '2', limit: '10000', from: '2026-12-01T00:00:00+01:00' }, StatementQuery)).toEqual({
      account: '00000000-0000-0000-0000-000000000002',
      limit: 10_000,
      from: '2026-12-01T00:00:00+01:00',
    });
  });
});
