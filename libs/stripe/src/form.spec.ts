import fc from 'fast-check';
import { decodeForm, FormError, FORM_LIMITS } from './form';

describe('decodeForm', () => {
  it('decodes Stripe bracket notation into nested objects and arrays', () => {
    const body =
      'amount=5000&currency=usd&metadata[order]=42&metadata[note]=a+b%26c&payment_method_types[0]=card&payment_method_types[1]=link' +
      '&automatic_payment_methods[enabled]=true&a[b][c]=x&expand[]=latest_charge&expand[]=latest_charge.balance_transaction';
    expect(decodeForm(body)).toEqual({
      amount: '5000',
      currency: 'usd',
      metadata: { order: '42', note: 'a b&c' },
      payment_method_types: ['card', 'link'],
      automatic_payment_methods: { enabled: 'true' },
      a: { b: { c: 'x' } },
      expand: ['latest_charge', 'latest_charge.balance_transaction'],
    });
  });

  it('reads query strings, percent-encoded brackets, arrays of objects and sparse indexes', () => {
    expect(decodeForm('?limit=3&created%5Bgte%5D=100&created[lt]=200')).toEqual({ limit: '3', created: { gte: '100', lt: '200' } });
    expect(decodeForm('items[0][price]=p1&items[0][quantity]=2&items[1][price]=p2')).toEqual({ items: [{ price: 'p1', quantity: '2' }, { price: 'p2' }] });
    expect(decodeForm('a[5]=y&a[2]=x')).toEqual({ a: ['x', 'y'] });
  });

  it('treats a missing value as empty, lets the last scalar win and skips empty pairs', () => {
    expect(decodeForm('flag&x=1&x=2&&description=')).toEqual({ flag: '', x: '2', description: '' });
    expect(decodeForm('')).toEqual({});
  });

  it('keeps __proto__ and constructor as plain keys', () => {
    const decoded = decodeForm('metadata[__proto__]=x&metadata[constructor]=y&__proto__[polluted]=1');
    expect(Object.keys(decoded.metadata)).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['bad percent-encoding', 'a=%E0%A4%A'],
    ['unbalanced bracket', 'a[b=1'],
    ['text after a bracket', 'a[b]c=1'],
    ['no name', '[a]=1'],
    ['value then object', 'a=1&a[b]=2'],
    ['object then value', 'a[b]=2&a=1'],
    ['array then object', 'a[0]=1&a[b]=2'],
    ['too deep', `a${'[x]'.repeat(FORM_LIMITS.maxDepth)}=1`],
    ['too many pairs', Array.from({ length: FORM_LIMITS.maxPairs + 1 }, (_, i) => `k${i}=v`).join('&')],
  ])('refuses %s', (_, body) => {
    expect(() => decodeForm(body)).toThrow(FormError);
  });

  it('never throws anything but FormError on arbitrary input', () => {
    const body = fc.string({ unit: fc.constantFrom(...'ab[]=&%+0_E9'), maxLength: 40 });
    fc.assert(
      fc.property(body, (text) => {
        try {
          decodeForm(text);
        } catch (error) {
          expect(error).toBeInstanceOf(FormError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
