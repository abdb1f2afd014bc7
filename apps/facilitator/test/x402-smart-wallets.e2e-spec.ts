import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWalletClient, decodeEventLog, encodeFunctionData, http, parseSignature, serializeErc6492Signature, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { eip3009Abi, MULTICALL3_ADDRESS, smartWalletFactoryAbi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { ConfigError } from '@mp/platform';
import { loadFacilitatorConfig } from '../src/config/facilitator.config';
import { balanceOf, payerAccount, randomNonce, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

/**
 * ERC-1271 (deployed) and ERC-6492 (counterfactual) smart-wallet payers, with contracts/SmartWallet.sol and its
 * CREATE2 factory. Counterfactual wallets are refused unless their factory is allowlisted; then the settlement is
 * one Multicall3 transaction that deploys the wallet and moves the money.
 */
describe('smart wallets', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const factory = manifest.contracts.smartWalletFactory as Address;
  const signerKey = manifest.accounts.facilitatorSigners[2].privateKey;
  const amount = 25_000n;
  const requirements = () => v2Requirements(manifest, usdc, amount);
  /** Default configuration: no ERC-6492 factory is allowed. */
  let closed: RunningFacilitator;
  /** FACILITATOR_EIP6492_FACTORIES names the test factory (in lowercase: the comparison ignores case). */
  let open: RunningFacilitator;
  let db: PrismaService;

  // Funds an address by an EIP-3009 transfer from payer #9, sent by a throwaway account (no shared EOA nonce).
  const funder = privateKeyToAccount(generatePrivateKey());
  const funderWallet = createWalletClient({ account: funder, chain: client.chain, transport: http(manifest.rpcUrl) });
  const fund = async (to: Address, value: bigint) => {
    const payload = await signAuthorization(payerAccount(manifest, 9), usdc, manifest.chainId, { to, value });
    const { authorization: a } = payload;
    const { r, s, v } = parseSignature(payload.signature);
    const hash = await funderWallet.writeContract({
      address: usdc.address as Address,
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      chain: null,
      args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s],
    });
    expect((await client.waitForTransactionReceipt({ hash, pollingInterval: 25 })).status).toBe('success');
  };

  beforeAll(async () => {
    await client.request({ method: 'anvil_setBalance' as never, params: [funder.address, '0x8ac7230489e80000'] as never });
    closed = await startFacilitator({ FACILITATOR_SIGNER_KEYS: signerKey });
    open = await startFacilitator({ FACILITATOR_SIGNER_KEYS: signerKey, FACILITATOR_EIP6492_FACTORIES: factory.toLowerCase() });
    db = open.app.get(PrismaService);
  });
  afterAll(async () => {
    await closed?.close();
    await open?.close();
  });

  const post = async (facilitator: RunningFacilitator, path: 'verify' | 'settle', body: unknown) => {
    const response = await postJson(`${facilitator.url}/${path}`, body);
    expect(response.status).toBe(200);
    return response.body;
  };
  const code = async (address: Address) => (await client.getCode({ address })) ?? '0x';
  const paymentRows = (nonce: string) =>
    db.$queryRawUnsafe<{ state: string; tx_hash: string | null }[]>(
      `SELECT state::text, tx_hash FROM facilitator.payments WHERE authorization_nonce = $1`,
      nonce.toLowerCase(),
    );
  const transferOf = async (hash: Hex) => {
    const receipt = await client.getTransactionReceipt({ hash });
    const transfers = receipt.logs
      .filter((l) => l.address.toLowerCase() === usdc.address.toLowerCase())
      .map((log) => {
        try {
          return decodeEventLog({ abi: eip3009Abi, ...log });
        } catch {
          return undefined;
        }
      })
      .filter((e) => e?.eventName === 'Transfer');
    return { receipt, transfers: transfers.map((t) => t!.args) };
  };

  /** A wallet the factory would deploy for (owner, salt): its address, and an ERC-6492 signer for it. */
  const counterfactualWallet = async (owner: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey())) => {
    const salt = randomNonce();
    const address = await client.readContract({ address: factory, abi: smartWalletFactoryAbi, functionName: 'predict', args: [owner.address, salt] });
    const deployCalldata = encodeFunctionData({ abi: smartWalletFactoryAbi, functionName: 'deploy', args: [owner.address, salt] });
    /** Signs an authorization from the wallet with `signer` (the owner unless told), wrapped in ERC-6492. */
    const pay = async (signer: PrivateKeyAccount = owner) => {
      const inner = await signAuthorization(signer, usdc, manifest.chainId, { from: address, to: merchant, value: amount });
      return { ...inner, signature: serializeErc6492Signature({ address: factory, data: deployCalldata, signature: inner.signature }) };
    };
    return { owner, salt, address, pay };
  };

  describe('ERC-1271 (deployed wallet)', () => {
    it('verifies and settles a payment signed by the owner, moving exactly the amount', async () => {
      const wallet = manifest.contracts.smartWallet as Address;
      const owner = privateKeyToAccount(manifest.accounts.smartWalletOwner.privateKey as Hex);
      const body = v2Body(await signAuthorization(owner, usdc, manifest.chainId, { from: wallet, to: merchant, value: amount }), requirements());
      const [walletBefore, merchantBefore] = [await balanceOf(client, usdc, wallet), await balanceOf(client, usdc, merchant)];

      expect(await post(open, 'verify', body)).toEqual({ isValid: true, payer: wallet });
      const settled = await post(open, 'settle', body);

      expect(settled).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: manifest.network, payer: wallet });
      const { receipt, transfers } = await transferOf(settled.transaction);
      expect(receipt.to?.toLowerCase()).toBe(usdc.address.toLowerCase());
      expect(transfers).toEqual([{ from: wallet, to: merchant, value: amount }]);
      expect(await balanceOf(client, usdc, wallet)).toBe(walletBefore - amount);
      expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + amount);
    });

    it('refuses a signature by someone other than the owner', async () => {
      const wallet = manifest.contracts.smartWallet as Address;
      const body = v2Body(
        await signAuthorization(payerAccount(manifest, 1), usdc, manifest.chainId, { from: wallet, to: merchant, value: amount }),
        requirements(),
      );
      expect(await post(open, 'verify', body)).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_signature', payer: wallet });
    });
  });

  describe('ERC-6492 (counterfactual wallet)', () => {
    it('is refused with eip6492_factory_not_allowed when the factory is not allowlisted, and nothing reaches the chain', async () => {
      const wallet = await counterfactualWallet();
      await fund(wallet.address, amount);
      const body = v2Body(await wallet.pay(), requirements());

      const verified = await post(closed, 'verify', body);
      expect(verified).toMatchObject({ isValid: false, invalidReason: 'eip6492_factory_not_allowed', payer: wallet.address });
      expect(verified.invalidMessage).toContain(factory);
      expect(await post(closed, 'settle', body)).toMatchObject({
        success: false,
        errorReason: 'eip6492_factory_not_allowed',
        transaction: '',
        network: manifest.network,
        payer: wallet.address,
      });
      expect(await code(wallet.address)).toBe('0x');
      expect(await balanceOf(client, usdc, wallet.address)).toBe(amount);
      expect(await paymentRows(body.paymentPayload.payload.authorization.nonce)).toEqual([]);
    });

    it('with the factory allowlisted: verifies, then deploys the wallet and pays in one Multicall3 transaction; a replay gets the same transaction', async () => {
      const wallet = await counterfactualWallet();
      await fund(wallet.address, amount);
      const body = v2Body(await wallet.pay(), requirements());
      const merchantBefore = await balanceOf(client, usdc, merchant);

      expect(await post(open, 'verify', body)).toEqual({ isValid: true, payer: wallet.address });
      expect(await code(wallet.address)).toBe('0x'); // verify is a pure read
      const settled = await post(open, 'settle', body);

      expect(settled).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: manifest.network, payer: wallet.address });
      const { receipt, transfers } = await transferOf(settled.transaction);
      expect(receipt.status).toBe('success');
      expect(receipt.to?.toLowerCase()).toBe(MULTICALL3_ADDRESS.toLowerCase());
      expect(receipt.logs.some((l) => l.address.toLowerCase() === factory.toLowerCase())).toBe(true); // WalletDeployed
      expect(transfers).toEqual([{ from: wallet.address, to: merchant, value: amount }]);

      expect(await code(wallet.address)).not.toBe('0x');
      expect(
        await client.readContract({
          address: wallet.address,
          abi: [{ type: 'function', name: 'owner', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] }],
          functionName: 'owner',
        }),
      ).toBe(wallet.owner.address);
      expect(await balanceOf(client, usdc, wallet.address)).toBe(0n);
      expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + amount);
      expect(await paymentRows(body.paymentPayload.payload.authorization.nonce)).toEqual([{ state: 'confirmed', tx_hash: settled.transaction }]);

      expect(await post(open, 'settle', body)).toEqual(settled);
      expect(await post(closed, 'settle', body)).toEqual(settled);
      expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + amount);
    });

    it("answers invalid_exact_evm_transaction_simulation_failed when the inner signature is not the owner's, and nothing reaches the chain", async () => {
      const wallet = await counterfactualWallet();
      await fund(wallet.address, amount);
      const body = v2Body(await wallet.pay(payerAccount(manifest, 1)), requirements());

      // The reference gives the same reason: the signature of an undeployed wallet is only checked by the simulation.
      expect(await post(open, 'verify', body)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_transaction_simulation_failed',
        payer: wallet.address,
      });
      expect(await post(open, 'settle', body)).toMatchObject({
        success: false,
        errorReason: 'invalid_exact_evm_transaction_simulation_failed',
        transaction: '',
      });
      expect(await code(wallet.address)).toBe('0x');
      expect(await balanceOf(client, usdc, wallet.address)).toBe(amount);
      expect(await paymentRows(body.paymentPayload.payload.authorization.nonce)).toEqual([]);
    });

    it('answers invalid_exact_evm_insufficient_balance for an unfunded counterfactual wallet', async () => {
      const wallet = await counterfactualWallet();
      const body = v2Body(await wallet.pay(), requirements());
      expect(await post(open, 'verify', body)).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_insufficient_balance',
        payer: wallet.address,
      });
      expect(await post(open, 'settle', body)).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_insufficient_balance', transaction: '' });
      expect(await code(wallet.address)).toBe('0x');
    });

    it('treats a 6492 signature of an already deployed wallet as ERC-1271, whatever the allowlist', async () => {
      const wallet = await counterfactualWallet();
      await fund(wallet.address, amount);
      const deploy = await funderWallet.writeContract({
        address: factory,
        abi: smartWalletFactoryAbi,
        functionName: 'deploy',
        args: [wallet.owner.address, wallet.salt],
        chain: null,
      });
      await client.waitForTransactionReceipt({ hash: deploy, pollingInterval: 25 });
      expect(await code(wallet.address)).not.toBe('0x');
      const body = v2Body(await wallet.pay(), requirements());

      expect(await post(closed, 'verify', body)).toEqual({ isValid: true, payer: wallet.address });
      expect(await post(open, 'verify', body)).toEqual({ isValid: true, payer: wallet.address });
      const settled = await post(open, 'settle', body);
      expect(settled).toMatchObject({ success: true, payer: wallet.address });
      const { receipt, transfers } = await transferOf(settled.transaction);
      expect(receipt.to?.toLowerCase()).toBe(usdc.address.toLowerCase()); // no deployment: straight to the token
      expect(transfers).toEqual([{ from: wallet.address, to: merchant, value: amount }]);

      const wrongOwner = v2Body(await wallet.pay(payerAccount(manifest, 1)), requirements());
      expect(await post(open, 'verify', wrongOwner)).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_signature' });
    });

    it('refuses a 6492 wrapper without a factory call for an address without code as an invalid signature, as the reference does', async () => {
      const wallet = await counterfactualWallet();
      const inner = await signAuthorization(wallet.owner, usdc, manifest.chainId, { from: wallet.address, to: merchant, value: amount });
      const signature = serializeErc6492Signature({ address: '0x0000000000000000000000000000000000000000', data: '0x', signature: inner.signature });
      expect(await post(open, 'verify', v2Body({ ...inner, signature }, requirements()))).toMatchObject({
        isValid: false,
        invalidReason: 'invalid_exact_evm_signature',
      });
    });
  });

  describe('FACILITATOR_EIP6492_FACTORIES', () => {
    const boot = (env: Record<string, string>) => {
      try {
        return loadFacilitatorConfig({ CHAIN_MANIFEST: process.env.CHAIN_MANIFEST, ...env });
      } catch (error) {
        return error;
      }
    };

    it("is empty by default and sets the local network's allowlist", () => {
      expect((boot({}) as { networks: { eip6492AllowedFactories: string[] }[] }).networks[0].eip6492AllowedFactories).toEqual([]);
      expect(
        (boot({ FACILITATOR_EIP6492_FACTORIES: ` ${factory}, ${merchant} ` }) as { networks: { eip6492AllowedFactories: string[] }[] }).networks[0]
          .eip6492AllowedFactories,
      ).toEqual([factory, merchant]);
    });

    it('refuses a malformed address, naming the variable', () => {
      const error = boot({ FACILITATOR_EIP6492_FACTORIES: `${factory},0x1234` });
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toContain('FACILITATOR_EIP6492_FACTORIES');
    });

    it('is refused with a networks file, which has its own per-network allowlist', () => {
      const file = join(mkdtempSync(join(tmpdir(), 'facilitator-')), 'networks.json');
      writeFileSync(file, JSON.stringify({ networks: [] }));
      const error = boot({ FACILITATOR_NETWORKS_FILE: file, FACILITATOR_EIP6492_FACTORIES: factory });
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toContain('eip6492AllowedFactories');
    });
  });
});
