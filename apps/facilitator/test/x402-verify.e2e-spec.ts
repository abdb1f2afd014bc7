import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serializeErc6492Signature, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

/** One test per verification outcome the local chain can produce, each asserting the exact reason string. */
describe('POST /verify', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const payer = payerAccount(manifest, 0);
  const amount = 10_000n;
  const now = () => BigInt(Math.floor(Date.now() / 1000));
  let facilitator: RunningFacilitator;

  beforeAll(async () => {
    facilitator = await startFacilitator();
  });
  afterAll(() => facilitator?.close());

  const verify = async (body: unknown) => {
    const response = await postJson(`${facilitator.url}/verify`, body);
    expect(response.status).toBe(200);
    return response.body;
  };
  const validPayload = () => signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
  const requirements = (overrides = {}) => v2Requirements(manifest, usdc, amount, overrides);

  it('accepts a valid EIP-3009 payment and names the payer', async () => {
    expect(await verify(v2Body(await validPayload(), requirements()))).toEqual({ isValid: true, payer: payer.address });
  });

  it('accepts an ERC-1271 smart wallet payment signed by its owner', async () => {
    const owner = privateKeyToAccount(manifest.accounts.smartWalletOwner.privateKey as Hex);
    const payload = await signAuthorization(owner, usdc, manifest.chainId, { from: manifest.contracts.smartWallet as Address, to: merchant, value: amount });
    expect(await verify(v2Body(payload, requirements()))).toMatchObject({ isValid: true, payer: manifest.contracts.smartWallet });
  });

  const cases: [string, () => Promise<unknown>][] = [
    [
      'invalid_x402_version',
      async () => ({
        ...v2Body(await validPayload(), requirements()),
        x402Version: 3,
        paymentPayload: { ...v2Body(await validPayload(), requirements()).paymentPayload, x402Version: 3 },
      }),
    ],
    ['unsupported_scheme', async () => v2Body(await validPayload(), requirements({ scheme: 'deferred' }))],
    ['invalid_network', async () => v2Body(await validPayload(), requirements({ network: 'eip155:1' }))],
    [
      'invalid_exact_evm_scheme',
      async () => {
        const body = v2Body(await validPayload(), requirements());
        return { ...body, paymentPayload: { ...body.paymentPayload, accepted: { ...body.paymentRequirements, scheme: 'upto' } } };
      },
    ],
    [
      'invalid_exact_evm_network_mismatch',
      async () => {
        const body = v2Body(await validPayload(), requirements());
        return { ...body, paymentPayload: { ...body.paymentPayload, accepted: { ...body.paymentRequirements, network: 'eip155:8453' } } };
      },
    ],
    ['invalid_exact_evm_missing_eip712_domain', async () => v2Body(await validPayload(), requirements({ extra: {} }))],
    ['invalid_payment_requirements', async () => v2Body(await validPayload(), requirements({ asset: manifest.contracts.smartWalletFactory }))],
    [
      'invalid_exact_evm_signature',
      async () => {
        const payload = await signAuthorization(payerAccount(manifest, 1), usdc, manifest.chainId, { from: payer.address, to: merchant, value: amount });
        return v2Body(payload, requirements());
      },
    ],
    [
      'invalid_exact_evm_recipient_mismatch',
      async () => v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: payer.address, value: amount }), requirements()),
    ],
    [
      'invalid_exact_evm_payload_authorization_valid_before',
      async () => v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount, validBefore: now() + 3n }), requirements()),
    ],
    [
      'invalid_exact_evm_payload_authorization_valid_after',
      async () => v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount, validAfter: now() + 120n }), requirements()),
    ],
    [
      'invalid_exact_evm_payload_authorization_value_mismatch',
      async () => v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount - 1n }), requirements()),
    ],
    [
      'invalid_exact_evm_token_name_mismatch',
      async () =>
        v2Body(
          await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }, { name: 'USDC' }),
          requirements({ extra: { name: 'USDC', version: '2' } }),
        ),
    ],
    [
      'invalid_exact_evm_token_version_mismatch',
      async () =>
        v2Body(
          await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }, { version: '1' }),
          requirements({ extra: { name: 'USD Coin', version: '1' } }),
        ),
    ],
    [
      'invalid_exact_evm_insufficient_balance',
      async () => {
        const broke = privateKeyToAccount(generatePrivateKey());
        return v2Body(await signAuthorization(broke, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
      },
    ],
    [
      'invalid_exact_evm_eip3009_not_supported',
      async () => {
        const plain = manifest.tokens.plain;
        return v2Body(await signAuthorization(payer, plain, manifest.chainId, { to: merchant, value: amount }), v2Requirements(manifest, plain, amount));
      },
    ],
    [
      'invalid_exact_evm_transaction_simulation_failed',
      async () => {
        const zero = '0x0000000000000000000000000000000000000000' as Address;
        return v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: zero, value: amount }), requirements({ payTo: zero }));
      },
    ],
    [
      'eip6492_factory_not_allowed',
      async () => {
        const counterfactual = privateKeyToAccount(generatePrivateKey()).address;
        const inner = await signAuthorization(payer, usdc, manifest.chainId, { from: counterfactual, to: merchant, value: amount });
        const signature = serializeErc6492Signature({
          address: manifest.contracts.smartWalletFactory as Address,
          data: '0xdeadbeef',
          signature: inner.signature,
        });
        return v2Body({ ...inner, signature }, requirements());
      },
    ],
    [
      'unsupported_payload_type',
      async () => {
        const body = v2Body(await validPayload(), requirements());
        return { ...body, paymentPayload: { ...body.paymentPayload, payload: { signature: '0x00', permit2Authorization: {} } } };
      },
    ],
  ];

  it.each(cases)('answers %s', async (reason, build) => {
    const response = await verify(await build());
    expect(response.isValid).toBe(false);
    expect(response.invalidReason).toBe(reason);
    expect(typeof response.invalidMessage).toBe('string');
    expect(response.invalidMessage.length).toBeGreaterThan(10);
  });

  // A valid payment's signature is proven by the simulation (the token checks it); ours runs when something refuses
  // the payment, and comes first, so a bad signature is named whatever else is wrong, by /verify and /settle alike.
  it.each([
    ['alone', {}],
    ['with another recipient', { to: payer.address }],
    ['expiring too soon', { validBefore: now() + 3n }],
    ['from a payer without funds', { from: privateKeyToAccount(generatePrivateKey()).address }],
  ])('names a bad signature first on /verify and /settle: %s', async (_, overrides) => {
    const forged = await signAuthorization(payerAccount(manifest, 1), usdc, manifest.chainId, {
      from: payer.address,
      to: merchant,
      value: amount,
      ...overrides,
    });
    const body = v2Body(forged, requirements());
    expect(await verify(body)).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_signature' });
    const { body: settled } = await postJson(`${facilitator.url}/settle`, body);
    expect(settled).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_signature', transaction: '' });
  });

  it('answers invalid_exact_evm_nonce_already_used once the authorization is canceled on chain', async () => {
    const payload = await validPayload();
    await postJson(`${facilitator.url}/settle`, v2Body(payload, requirements()));
    expect(await verify(v2Body(payload, requirements()))).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' });
  });

  describe('with a networks file', () => {
    let custom: RunningFacilitator;
    const noCode = privateKeyToAccount(generatePrivateKey()).address;

    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'facilitator-'));
      const file = join(dir, 'networks.json');
      const asset = (address: string) => ({ address, symbol: 'USDC', decimals: 6, eip712: { name: 'USD Coin', version: '2' } });
      writeFileSync(
        file,
        JSON.stringify({
          networks: [
            {
              network: manifest.network,
              displayName: 'anvil',
              rpcUrls: [manifest.rpcUrl],
              pollingIntervalMs: 25,
              signerKeyEnv: ['TEST_SIGNER_KEY'],
              assets: [asset(usdc.address), asset(noCode)],
            },
            {
              network: 'eip155:999999',
              displayName: 'dead rpc',
              rpcUrls: ['http://127.0.0.1:9'],
              signerKeyEnv: ['TEST_SIGNER_KEY'],
              assets: [asset(usdc.address)],
            },
          ],
        }),
      );
      custom = await startFacilitator({
        FACILITATOR_NETWORKS_FILE: file,
        TEST_SIGNER_KEY: manifest.accounts.facilitatorSigners[3].privateKey,
        RPC_TIMEOUT_MS: '500',
      });
    });
    afterAll(() => custom?.close());

    it('answers asset_not_deployed_contract for an allowlisted address without code', async () => {
      const token = { ...usdc, address: noCode };
      const payload = await signAuthorization(payer, token, manifest.chainId, { to: merchant, value: amount });
      const { body } = await postJson(`${custom.url}/verify`, v2Body(payload, v2Requirements(manifest, token, amount)));
      expect(body).toMatchObject({ isValid: false, invalidReason: 'asset_not_deployed_contract' });
    });

    it('answers unexpected_verify_error, not an invalid signature, when the RPC is down', async () => {
      const payload = await signAuthorization(payer, usdc, 999999, { to: merchant, value: amount });
      const { status, body } = await postJson(`${custom.url}/verify`, v2Body(payload, requirements({ network: 'eip155:999999' })));
      expect(status).toBe(200);
      expect(body).toMatchObject({ isValid: false, invalidReason: 'unexpected_verify_error' });
    });
  });
});
