import { fromDbDecimal, isRetryableTransactionError, isUniqueViolation, Prisma, resolveDbOptions, toDbDecimal } from './index';

describe('isUniqueViolation', () => {
  it('recognizes Prisma P2002', () => {
    const err = new Prisma.PrismaClientKnownRequestError('Unique constraint failed', { code: 'P2002', clientVersion: 'x' });
    expect(isUniqueViolation(err)).toBe(true);
  });

  it('recognizes SQLSTATE 23505 on pg errors, in a cause chain, and in Prisma meta', () => {
    expect(isUniqueViolation(Object.assign(new Error('dup'), { code: '23505' }))).toBe(true);
    expect(isUniqueViolation(new Error('wrapped', { cause: Object.assign(new Error('dup'), { code: '23505' }) }))).toBe(true);
    expect(isUniqueViolation({ code: 'P2010', meta: { code: '23505' } })).toBe(true);
    expect(isUniqueViolation({ code: 'P2010', meta: { driverAdapterError: { cause: { kind: 'UniqueConstraintViolation' } } } })).toBe(true);
  });

  it('says no to everything else', () => {
    for (const err of [undefined, null, 'P2002', 42, new Error('x'), { code: '23503' }, { code: 'P2003' }]) {
      expect(isUniqueViolation(err)).toBe(false);
    }
    const cyclic: { cause?: unknown } = {};
    cyclic.cause = cyclic;
    expect(isUniqueViolation(cyclic)).toBe(false);
  });

  it('classifies serialization failures as retryable', () => {
    expect(isRetryableTransactionError({ code: 'P2034' })).toBe(true);
    expect(isRetryableTransactionError({ code: '40001' })).toBe(true);
    expect(isRetryableTransactionError({ code: '23505' })).toBe(false);
  });
});

describe('decimal codecs', () => {
  it('round-trips uint256 max exactly', () => {
    const max = (1n << 256n) - 1n;
    const d = toDbDecimal(max);
    expect(d.toFixed()).toBe(max.toString());
    expect(fromDbDecimal(d)).toBe(max);
    expect(fromDbDecimal('0')).toBe(0n);
  });

  it('refuses fractions and unsafe numbers', () => {
    expect(() => fromDbDecimal(new Prisma.Decimal('1.5'))).toThrow(RangeError);
    expect(() => toDbDecimal(2 ** 60)).toThrow(RangeError);
  });
});

describe('resolveDbOptions', () => {
  it('falls back to the environment, then defaults', () => {
    expect(resolveDbOptions({}, {})).toMatchObject({ url: 'postgresql://postgres@127.0.0.1:5432/machine_payments', poolSize: 20 });
    expect(resolveDbOptions({}, { DATABASE_URL: 'postgresql://a@b/c', DATABASE_POOL_SIZE: '7' })).toMatchObject({
      url: 'postgresql://a@b/c',
      poolSize: 7,
    });
    expect(resolveDbOptions({ url: 'postgresql://x@y/z', poolSize: 3 }, { DATABASE_URL: 'postgresql://a@b/c' })).toMatchObject({
      url: 'postgresql://x@y/z',
      poolSize: 3,
    });
  });

  it('rejects a bad pool size', () => {
    expect(() => resolveDbOptions({}, { DATABASE_POOL_SIZE: 'lots' })).toThrow(/DATABASE_POOL_SIZE/);
    expect(() => resolveDbOptions({ poolSize: 0 }, {})).toThrow(/DATABASE_POOL_SIZE/);
  });
});
