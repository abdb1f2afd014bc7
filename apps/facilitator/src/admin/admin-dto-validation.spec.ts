import { problemValidationPipe, ProblemError } from '@mp/platform';
import { PageQuery } from '../merchants/merchants.dto';
import { CreateMerchantDto } from './admin.dto';

/** What the pipe throws for a value, as the problem's detail and invalidParams. */
async function refusal(value: unknown, metatype: new () => object, type: 'body' | 'query' = 'body') {
  try {
    await problemValidationPipe().transform(value, { type, metatype });
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemError);
    const problem = error as ProblemError;
    expect(problem.code).toBe('validation_failed');
    return { detail: problem.message, invalidParams: problem.extensions.invalidParams };
  }
  throw new Error('the pipe accepted the value');
}

describe('problemValidationPipe', () => {
  it('gives back the DTO instance, trimmed and without anything unknown', async () => {
    const dto = await problemValidationPipe().transform({ name: '  Acme  ', allowAnyPayTo: true }, { type: 'body', metatype: CreateMerchantDto });
    expect(dto).toBeInstanceOf(CreateMerchantDto);
    expect(dto).toEqual({ name: 'Acme', allowAnyPayTo: true });
  });

  it('names every bad field once, nested ones by path, unknown ones last', async () => {
    const refused = await refusal({ extra: 1, name: '', receivingAddresses: [{ network: 'eip155:1', address: '0x00' }, 'x'] }, CreateMerchantDto);
    expect(refused).toEqual({
      detail: 'invalid field(s): name, receivingAddresses.0.address, receivingAddresses.1, extra',
      invalidParams: [
        { name: 'name', reason: 'must be a string of 1 to 200 characters' },
        { name: 'receivingAddresses.0.address', reason: 'must be a 0x-prefixed 20-byte hex address' },
        { name: 'receivingAddresses.1', reason: 'must be an object { network, address }' },
        { name: 'extra', reason: 'unknown field' },
      ],
    });
  });

  it('refuses constructor and __proto__ members as unknown (class-transformer would drop them unseen)', async () => {
    expect(await refusal(JSON.parse('{"name":"Acme","__proto__":{"allowAnyPayTo":true},"constructor":1}'), CreateMerchantDto)).toEqual({
      detail: 'invalid field(s): constructor, __proto__',
      invalidParams: [
        { name: 'constructor', reason: 'unknown field' },
        { name: '__proto__', reason: 'unknown field' },
      ],
    });
  });

  it('refuses a body that is not an object', async () => {
    for (const body of [[{ name: 'x' }], 'x', 5, true]) {
      expect(await refusal(body, CreateMerchantDto)).toEqual({
        detail: 'the body must be a JSON object',
        invalidParams: [{ name: '(body)', reason: 'must be a JSON object' }],
      });
    }
  });

  it('speaks of query parameters in a query string, and converts the page size', async () => {
    expect(await problemValidationPipe().transform({ limit: '20' }, { type: 'query', metatype: PageQuery })).toEqual({ limit: 20 });
    expect(await refusal({ limit: '101', order: 'asc' }, PageQuery, 'query')).toEqual({
      detail: 'invalid query parameter(s): limit, order',
      invalidParams: [
        { name: 'limit', reason: 'must be an integer from 1 to 100' },
        { name: 'order', reason: 'unknown query parameter' },
      ],
    });
    expect((await refusal({ limit: ['1', '2'] }, PageQuery, 'query')).invalidParams).toEqual([{ name: 'limit', reason: 'must be an integer from 1 to 100' }]);
  });
});
