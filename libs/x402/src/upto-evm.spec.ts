import { X402Reason } from './reasons';
import { decodePaymentRequest, type PaymentRequest } from './request';
import type { ServedNetworks } from './exact-evm';
import { permitNonceKey, UPTO_PERMIT2_PROXY_ADDRESS, uptoEvmPermit, uptoSettleArgs, type UptoContext } from './upto-evm';

const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const FACILITATOR = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const NOW = 1_800_000_000n;
const requirements = {
  scheme: 'upto',
  network: 'eip155:84532',
  amount: '50000',
  asset: USDC,
  payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  maxTimeoutSeconds: 300,
  extra: { name: 'USDC', version: '2', facilitatorAddress: FACILITATOR },
};
const permit2Authorization = {
  from: '0x857b06519e91e3a54538791bdbb0e22373e36b66',
  permitted: { token: USDC, amount: '50000' },
  spender: UPTO_PERMIT2_PROXY_ADDRESS,
  nonce: '98765432109876543210',
  deadline: String(NOW + 300n),
  witness: { to: requirements.payTo, facilitator: FACILITATOR, validAfter: '0' },
};
const payload = { signature: `0x${'11'.repeat(65)}`, permit2Authorization };

const served: ServedNetworks = {
  networkId: (network) => (network === 'eip155:84532' ? 'eip155:84532' : undefined),
  assetAddress: (network, asset) => (network === 'eip155:84532' && asset.toLowerCase() === USDC.toLowerCase() ? USDC : undefined),
};
const verifying: UptoContext = { now: NOW, facilitators: [FACILITATOR.toLowerCase()], phase: 'verify' };
const settling: UptoContext = { ...verifying, phase: 'settle' };

type Auth = typeof permit2Authorization;
function request(change: { requirements?: object; accepted?: object; authorization?: (a: Auth) => Auth; payload?: unknown } = {}): PaymentRequest {
  const r = { ...requirements, ...change.requirements };
  const p = change.payload ?? { ...payload, permit2Authorization: (change.authorization ?? ((a) => a))(structuredClone(permit2Authorization)) };
  const decoded = decodePaymentRequest({
    x402Version: 2,
    paymentPayload: { x402Version: 2, accepted: { ...r, ...change.accepted }, payload: p },
    paymentRequirements: r,
  });
  if (!decoded.ok) throw new Error(`fixture does not decode: ${JSON.stringify(decoded)}`);
  return decoded.request;
}

const reasonOf = (decoding: ReturnType<typeof uptoEvmPermit>) => (decoding.ok ? 'ok' : decoding.kind === 'invalid' ? decoding.reason : 'malformed');

describe('uptoEvmPermit', () => {
  it('refuses maxTimeoutSeconds 0, at /verify and at /settle: a payment needs time to be authorized and settled', () => {
    for (const context of [verifying, settling]) {
      expect(reasonOf(uptoEvmPermit(request({ requirements: { maxTimeoutSeconds: 0 } }), served, context))).toBe('invalid_payment_requirements');
    }
    expect(reasonOf(uptoEvmPermit(request({ requirements: { maxTimeoutSeconds: 1 } }), served, verifying))).toBe('ok');
  });

  it('reads an upto payload as the Permit2 witness transfer, on the configured network and token', () => {
    expect(uptoEvmPermit(request(), served, verifying)).toEqual({
      ok: true,
      amount: 50_000n,
      permit: {
        network: 'eip155:84532',
        asset: USDC,
        owner: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
        maxAmount: 50_000n,
        spender: UPTO_PERMIT2_PROXY_ADDRESS,
        nonce: 98765432109876543210n,
        deadline: NOW + 300n,
        witness: { to: requirements.payTo, facilitator: FACILITATOR, validAfter: 0n },
        signature: payload.signature,
      },
    });
  });

  it('names the malformed fields of a payload that is not a Permit2 witness transfer', () => {
    const decoded = uptoEvmPermit(
      request({ authorization: (a) => ({ ...a, nonce: '-1', witness: { ...a.witness, facilitator: 'nobody' } }) }),
      served,
      verifying,
    );
    expect(decoded).toMatchObject({ ok: false, kind: 'malformed' });
    expect(decoded.ok === false && decoded.kind === 'malformed' && decoded.issues.map((i) => i.field)).toEqual([
      'paymentPayload.payload.permit2Authorization.nonce',
      'paymentPayload.payload.permit2Authorization.witness.facilitator',
    ]);
    expect(reasonOf(uptoEvmPermit(request({ payload: { signature: '0x11', authorization: {} } }), served, verifying))).toBe('malformed');
  });

  // Each row breaks one check; the reasons are @x402/evm 2.27's, in its order (the first failing check wins).
  it.each<[string, Parameters<typeof request>[0], string]>([
    ['the requirements scheme', { requirements: { scheme: 'exact' } }, X402Reason.uptoEvmScheme],
    ['the payload scheme', { accepted: { scheme: 'exact' } }, X402Reason.uptoEvmScheme],
    ['an unserved network', { requirements: { network: 'eip155:1' } }, X402Reason.invalidNetwork],
    ['the payload network', { accepted: { network: 'eip155:1' } }, X402Reason.uptoEvmNetworkMismatch],
    ['the spender', { authorization: (a) => ({ ...a, spender: '0x402085c248EeA27D92E8b30b2C58ed07f9E20001' }) }, X402Reason.permit2Spender],
    ['the recipient', { requirements: { payTo: FACILITATOR } }, X402Reason.permit2RecipientMismatch],
    ['the facilitator', { authorization: (a) => ({ ...a, witness: { ...a.witness, facilitator: requirements.payTo } }) }, X402Reason.uptoFacilitatorMismatch],
    ['a deadline 5 s away', { authorization: (a) => ({ ...a, deadline: String(NOW + 5n) }) }, X402Reason.permit2DeadlineExpired],
    ['validAfter in the future', { authorization: (a) => ({ ...a, witness: { ...a.witness, validAfter: String(NOW + 1n) } }) }, X402Reason.permit2NotYetValid],
    ['the maximum', { requirements: { amount: '49999' } }, X402Reason.permit2AmountMismatch],
    ['the token', { authorization: (a) => ({ ...a, permitted: { ...a.permitted, token: FACILITATOR } }) }, X402Reason.permit2TokenMismatch],
    [
      'an asset not accepted',
      { requirements: { asset: FACILITATOR }, authorization: (a) => ({ ...a, permitted: { ...a.permitted, token: FACILITATOR } }) },
      X402Reason.invalidPaymentRequirements,
    ],
    ['accepted ≠ requirements', { accepted: { maxTimeoutSeconds: 301 } }, X402Reason.invalidPaymentRequirements],
  ])('refuses %s at verify', (_, change, reason) => {
    expect(reasonOf(uptoEvmPermit(request(change), served, verifying))).toBe(reason);
  });

  it('checks the spender before the deadline (the reference order)', () => {
    const both = request({ authorization: (a) => ({ ...a, spender: FACILITATOR, deadline: '1' }) });
    expect(reasonOf(uptoEvmPermit(both, served, verifying))).toBe(X402Reason.permit2Spender);
  });

  it('accepts a deadline exactly 6 s away and validAfter exactly now', () => {
    const edge = request({ authorization: (a) => ({ ...a, deadline: String(NOW + 6n), witness: { ...a.witness, validAfter: String(NOW) } }) });
    expect(reasonOf(uptoEvmPermit(edge, served, verifying))).toBe('ok');
  });

  it('at settle, reads the requirements amount as the charge (any amount, checked later) but holds accepted to the maximum', () => {
    const charge = request({ requirements: { amount: '1234' }, accepted: { amount: '50000' } });
    expect(uptoEvmPermit(charge, served, settling)).toMatchObject({ ok: true, amount: 1234n, permit: { maxAmount: 50_000n } });
    expect(reasonOf(uptoEvmPermit(charge, served, verifying))).toBe(X402Reason.permit2AmountMismatch);
    const zero = request({ requirements: { amount: '0' }, accepted: { amount: '50000' } });
    expect(uptoEvmPermit(zero, served, settling)).toMatchObject({ ok: true, amount: 0n });
    const lowered = request({ requirements: { amount: '10' }, accepted: { amount: '10' } });
    expect(reasonOf(uptoEvmPermit(lowered, served, settling))).toBe(X402Reason.permit2AmountMismatch);
  });

  it('keys the nonce as a 32-byte word, and builds the proxy call for the charge', () => {
    expect(permitNonceKey(255n)).toBe(`0x${'00'.repeat(31)}ff`);
    const decoded = uptoEvmPermit(request(), served, verifying);
    if (!decoded.ok) throw new Error('fixture');
    expect(uptoSettleArgs(decoded.permit, 7n)).toEqual([
      { permitted: { token: USDC, amount: 50_000n }, nonce: 98765432109876543210n, deadline: NOW + 300n },
      7n,
      '0x857b06519E91e3A54538791bDbb0E22373e36b66',
      { to: requirements.payTo, facilitator: FACILITATOR, validAfter: 0n },
      payload.signature,
    ]);
  });
});
