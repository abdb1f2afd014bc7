import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';
import type { MerchantConfig } from '../../merchant.config';
import { errorCodeFor } from './error-codes';
import { paymentOffer } from './offer';
import { checkSubmission } from './submitted-payment';

// anvil's well-known first key: a signer with no value anywhere else
const payer = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcaf784d7bf4f2ff80');
const price: MerchantConfig['price'] = {
  network: 'eip155:31337',
  asset: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  amount: '10000',
  eip712: { name: 'USD Coin', version: '2' },
  payTo: '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc',
};
const offer = paymentOffer(price, '10000', { url: 'http://merchant.test/a2a/rest/tasks/t-1', description: 'forecast' });
const sign = (required: PaymentRequired = offer) =>
  new x402Client()
    .register('eip155:31337', new ExactEvmScheme(toClientEvmSigner(payer)))
    .setSpendControls(false)
    .createPaymentPayload(required);
const altered = (change: object): PaymentRequired => ({ ...offer, accepts: [{ ...offer.accepts[0], ...change }] });

describe('checkSubmission', () => {
  it('accepts what the x402 client signs for the offer, naming the authorization it spends', async () => {
    const payload = await sign();
    const check = checkSubmission(payload, offer);
    expect(check).toMatchObject({ ok: true, payer: payer.address.toLowerCase(), nonce: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  });

  it.each([
    ['a different amount', () => sign(altered({ amount: '9999' })), 'invalid_exact_evm_authorization_value', 'INVALID_AMOUNT'],
    ['a different recipient', () => sign(altered({ payTo: payer.address })), 'invalid_exact_evm_recipient_mismatch', 'INVALID_PAYLOAD'],
    ['another network', async () => ({ ...(await sign()), accepted: { ...offer.accepts[0], network: 'eip155:8453' } }), 'invalid_network', 'NETWORK_MISMATCH'],
    ['another asset', () => sign(altered({ asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' })), 'invalid_payment_requirements', 'INVALID_PAYLOAD'],
    [
      'another task',
      () => sign({ ...offer, resource: { ...offer.resource, url: 'http://merchant.test/a2a/rest/tasks/t-2' } }),
      'invalid_payment_requirements',
      'INVALID_PAYLOAD',
    ],
    ['an x402 v1 payload', async () => ({ x402Version: 1, scheme: 'exact', network: 'base', payload: {} }), 'invalid_payload', 'INVALID_PAYLOAD'],
    ['no payload at all', async () => undefined, 'invalid_payload', 'INVALID_PAYLOAD'],
  ])('refuses %s with the reason the facilitator would give', async (_, payload, reason, code) => {
    const check = checkSubmission(await payload(), offer);
    expect(check).toMatchObject({ ok: false, reason });
    expect(errorCodeFor((check as { reason: string }).reason)).toBe(code);
  });

  it('refuses an authorization whose value differs from the requirements it claims to accept', async () => {
    const payload = (await sign()) as PaymentPayload & { payload: { authorization: { value: string } } };
    payload.payload.authorization.value = '1';
    expect(checkSubmission(payload, offer)).toMatchObject({ ok: false, reason: 'invalid_exact_evm_authorization_value' });
  });
});

describe('errorCodeFor', () => {
  it('maps facilitator reasons to the a2a-x402 codes, and anything else to INVALID_PAYLOAD', () => {
    expect(errorCodeFor('insufficient_funds')).toBe('INSUFFICIENT_FUNDS');
    expect(errorCodeFor('invalid_exact_evm_insufficient_balance')).toBe('INSUFFICIENT_FUNDS');
    expect(errorCodeFor('invalid_exact_evm_signature')).toBe('INVALID_SIGNATURE');
    expect(errorCodeFor('invalid_exact_evm_payload_authorization_valid_before')).toBe('EXPIRED_PAYMENT');
    expect(errorCodeFor('invalid_exact_evm_nonce_already_used')).toBe('DUPLICATE_NONCE');
    expect(errorCodeFor('settlement_pending')).toBe('SETTLEMENT_FAILED');
    expect(errorCodeFor('unexpected_verify_error')).toBe('SETTLEMENT_FAILED');
    expect(errorCodeFor('invalid_scheme')).toBe('INVALID_PAYLOAD');
    expect(errorCodeFor(undefined)).toBe('INVALID_PAYLOAD');
  });
});
