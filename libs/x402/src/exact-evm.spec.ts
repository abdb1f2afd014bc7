import { exactEvmAuthorization, type ServedNetworks } from './exact-evm';
import { X402Reason } from './reasons';
import { decodePaymentRequest, type PaymentRequest } from './request';

const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const requirements = {
  scheme: 'exact',
  network: 'eip155:84532',
  amount: '10000',
  asset: USDC.toLowerCase(),
  payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  maxTimeoutSeconds: 60,
  extra: { name: 'USDC', version: '2' },
};
const authorization = {
  from: '0x857b06519e91e3a54538791bdbb0e22373e36b66',
  to: requirements.payTo,
  value: '10000',
  validAfter: '0',
  validBefore: '1900000000',
  nonce: `0x${'AB'.repeat(32)}`,
};
const payload = { signature: `0x${'11'.repeat(65)}`, authorization };

/** base-sepolia served under its CAIP-2 id and its v1 name, accepting USDC only. */
const served: ServedNetworks = {
  networkId: (network, version) => (network === 'eip155:84532' || (version === 1 && network === 'base-sepolia') ? 'eip155:84532' : undefined),
  assetAddress: (network, asset) => (network === 'eip155:84532' && asset.toLowerCase() === USDC.toLowerCase() ? USDC : undefined),
};

function v2(change: { requirements?: object; accepted?: object; payload?: unknown } = {}): PaymentRequest {
  const r = { ...requirements, ...change.requirements };
  const decoded = decodePaymentRequest({
    x402Version: 2,
    paymentPayload: { x402Version: 2, accepted: { ...r, ...change.accepted }, payload: change.payload ?? payload },
    paymentRequirements: r,
  });
  if (!decoded.ok) throw new Error(`fixture does not decode: ${JSON.stringify(decoded)}`);
  return decoded.request;
}

describe('exactEvmAuthorization', () => {
  it('refuses maxTimeoutSeconds 0: a payment needs time to be authorized and settled', () => {
    expect(exactEvmAuthorization(v2({ requirements: { maxTimeoutSeconds: 0 } }), served)).toMatchObject({
      ok: false,
      reason: 'invalid_payment_requirements',
      message: expect.stringContaining('maxTimeoutSeconds is 0'),
    });
    expect(exactEvmAuthorization(v2({ requirements: { maxTimeoutSeconds: 1 } }), served)).toMatchObject({ ok: true });
  });

  it('reads a v2 exact payload as the EIP-3009 authorization, on the configured network and token', () => {
    expect(exactEvmAuthorization(v2(), served)).toEqual({
      ok: true,
      authorization: {
        network: 'eip155:84532',
        asset: USDC,
        from: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
        to: requirements.payTo,
        value: 10_000n,
        validAfter: 0n,
        validBefore: 1_900_000_000n,
        nonce: `0x${'ab'.repeat(32)}`,
        signature: payload.signature,
        domain: { name: 'USDC', version: '2' },
        requirement: { payTo: requirements.payTo, amount: 10_000n },
      },
    });
  });

  it('resolves a v1 network name to its CAIP-2 id', () => {
    const decoded = decodePaymentRequest({
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
        asset: USDC,
        extra: requirements.extra,
      },
    });
    const result = decoded.ok && exactEvmAuthorization(decoded.request, served);
    expect(result).toMatchObject({ ok: true, authorization: { network: 'eip155:84532', asset: USDC } });
  });

  it('names the malformed fields of a payload that is no EIP-3009 payload', () => {
    const result = exactEvmAuthorization(v2({ payload: { signature: '0x1', authorization: { ...authorization, value: '-1' } } }), served);
    expect(result).toMatchObject({ ok: false, kind: 'malformed' });
    expect(result.ok === false && result.kind === 'malformed' && result.issues.map((i) => i.field)).toEqual([
      'paymentPayload.payload.signature',
      'paymentPayload.payload.authorization.value',
    ]);
  });

  it('refuses a Permit2 payload as an unsupported payload type, without a payer', () => {
    expect(exactEvmAuthorization(v2({ payload: { permit2Authorization: {} } }), served)).toEqual({
      ok: false,
      kind: 'invalid',
      reason: X402Reason.unsupportedPayloadType,
      message: expect.any(String),
    });
  });

  it.each([
    ['another scheme', { requirements: { scheme: 'upto' } }, X402Reason.unsupportedScheme],
    ['a network not served', { requirements: { network: 'eip155:1' } }, X402Reason.invalidNetwork],
    ['a payload for another scheme', { accepted: { scheme: 'upto' } }, X402Reason.exactEvmScheme],
    ['no EIP-712 domain in extra', { requirements: { extra: { name: 'USDC' } } }, X402Reason.exactEvmMissingEip712Domain],
    ['a payload for another network', { accepted: { network: 'eip155:1' } }, X402Reason.exactEvmNetworkMismatch],
    ['an asset not accepted', { requirements: { asset: '0x5FbDB2315678afecb367f032d93F642f64180aa3' } }, X402Reason.invalidPaymentRequirements],
    ['accepted differing from the requirements', { accepted: { amount: '9999' } }, X402Reason.invalidPaymentRequirements],
  ])('refuses %s with its reason, naming the payer', (_case, change, reason) => {
    expect(exactEvmAuthorization(v2(change), served)).toEqual({
      ok: false,
      kind: 'invalid',
      reason,
      message: expect.any(String),
      payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
    });
  });

  it('checks in the reference order: the scheme before the network', () => {
    expect(exactEvmAuthorization(v2({ requirements: { scheme: 'upto', network: 'eip155:1' } }), served)).toMatchObject({
      reason: X402Reason.unsupportedScheme,
    });
    expect(exactEvmAuthorization(v2({ requirements: { network: 'eip155:1', extra: {} } }), served)).toMatchObject({ reason: X402Reason.invalidNetwork });
  });
});
