import fc from 'fast-check';
import { canonicalJson, deepEqual } from './canonical';
import { decodeHeader, encodeHeader, HeaderDecodeError } from './headers';
import { decodePaymentRequest } from './request';

const requirements = {
  scheme: 'exact',
  network: 'eip155:84532',
  amount: '10000',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  maxTimeoutSeconds: 60,
  extra: { name: 'USDC', version: '2' },
};
const payload = {
  signature: `0x${'11'.repeat(65)}`,
  authorization: {
    from: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
    to: requirements.payTo,
    value: '10000',
    validAfter: '0',
    validBefore: '1900000000',
    nonce: `0x${'ab'.repeat(32)}`,
  },
};
const v2 = {
  x402Version: 2,
  paymentPayload: { x402Version: 2, resource: { url: 'https://api.example/x' }, accepted: requirements, payload },
  paymentRequirements: requirements,
};

describe('decodePaymentRequest', () => {
  it('folds a v2 request into the version-neutral shape', () => {
    const result = decodePaymentRequest(v2);
    expect(result.ok && result.request).toMatchObject({
      x402Version: 2,
      scheme: 'exact',
      network: 'eip155:84532',
      amount: '10000',
      payloadNetwork: 'eip155:84532',
    });
  });

  it('folds a v1 request, reading maxAmountRequired and the named network', () => {
    const result = decodePaymentRequest({
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload },
      paymentRequirements: {
        scheme: 'exact',
        network: 'base-sepolia',
        maxAmountRequired: '10000',
        resource: 'https://api.example/x',
        description: '',
        payTo: requirements.payTo,
        maxTimeoutSeconds: 60,
        asset: requirements.asset,
      },
    });
    expect(result.ok && result.request).toMatchObject({ x402Version: 1, amount: '10000', network: 'base-sepolia' });
  });

  it('names every bad field, including unknown ones', () => {
    const result = decodePaymentRequest({ ...v2, surprise: 1, paymentRequirements: { ...requirements, amount: '-5', maxTimeoutSeconds: 'soon' } });
    expect(result.ok).toBe(false);
    const fields = !result.ok && result.kind === 'malformed' ? result.issues.map((i) => i.field) : [];
    expect(fields).toEqual(expect.arrayContaining(['paymentRequirements.amount', 'paymentRequirements.maxTimeoutSeconds']));
    expect(result.ok === false && result.kind === 'malformed' && result.issues.some((i) => i.message.includes('surprise'))).toBe(true);
  });

  it('reports an unknown version as the protocol reason, not a malformed body', () => {
    const result = decodePaymentRequest({ ...v2, x402Version: 7, paymentPayload: { ...v2.paymentPayload, x402Version: 7 } });
    expect(result).toMatchObject({ ok: false, kind: 'invalid', reason: 'invalid_x402_version' });
  });

  it('gives equal fingerprints to equal requests whatever their key order', () => {
    const reordered = JSON.parse(canonicalJson(v2));
    const a = decodePaymentRequest(v2);
    const b = decodePaymentRequest(reordered);
    expect(a.ok && b.ok && a.request.fingerprint === b.request.fingerprint).toBe(true);
  });

  it('never throws, whatever it is given', () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        const result = decodePaymentRequest(input);
        expect(typeof result.ok).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.record({ x402Version: fc.constantFrom(1, 2, 3), paymentPayload: fc.object(), paymentRequirements: fc.object() }), (input) => {
        expect(() => decodePaymentRequest(input)).not.toThrow();
      }),
    );
  });
});

describe('x402 header codec', () => {
  it('round-trips any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(deepEqual(decodeHeader(encodeHeader(value)), JSON.parse(JSON.stringify(value)))).toBe(true);
      }),
    );
  });

  it('rejects garbage with HeaderDecodeError and nothing else', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          decodeHeader(text);
        } catch (error) {
          expect(error).toBeInstanceOf(HeaderDecodeError);
        }
      }),
    );
  });
});
