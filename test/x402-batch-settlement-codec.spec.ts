// The codec of libs/x402 against the official @x402/evm batch-settlement client: what the client signs and sends
// decodes, passes the config checks, and its signatures recover to the payer with our EIP-712 types.
import { receiveWithAuthorizationTypes } from '@mp/money';
import { randomBytes } from 'node:crypto';
import { buildChannelConfig, createBatchSettlementEIP3009DepositPayload } from '@x402/evm/batch-settlement/client';
import { getAddress, recoverTypedDataAddress, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  channelConfigProblem,
  channelIdOf,
  decodeBatchSettlementPayload,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  erc3009DepositNonce,
  voucherTypedData,
  type DepositPayload,
} from '@mp/x402';

const CHAIN_ID = 31_337;
const NETWORK = `eip155:${CHAIN_ID}` as const;
const payer = privateKeyToAccount(toHex(randomBytes(32)));
const receiver = getAddress(toHex(randomBytes(20)));
const authorizer = getAddress(toHex(randomBytes(20)));
const token = getAddress(toHex(randomBytes(20)));
const requirements = {
  scheme: 'batch-settlement',
  network: NETWORK,
  amount: '1000',
  asset: token,
  payTo: receiver,
  maxTimeoutSeconds: 300,
  extra: { name: 'USD Coin', version: '2', receiverAuthorizer: authorizer, withdrawDelay: 900 },
};

describe('batch-settlement codec vs the official client', () => {
  it('decodes the official client deposit payload, whose signatures recover to the payer', async () => {
    const channelConfig = buildChannelConfig({ signer: payer, salt: toHex(randomBytes(32)) } as never, requirements as never);
    const { payload } = await createBatchSettlementEIP3009DepositPayload(payer as never, 2, requirements as never, channelConfig, '10000', '1000');
    const decoded = decodeBatchSettlementPayload(payload);
    expect(decoded.ok).toBe(true);
    const deposit = (decoded as { payload: DepositPayload }).payload;
    expect(deposit.type).toBe('deposit');
    const channelId = channelIdOf(deposit.channelConfig, CHAIN_ID);
    expect(deposit.voucher.channelId).toBe(channelId);
    expect(channelConfigProblem(deposit.channelConfig, channelId, requirements, CHAIN_ID)).toBeUndefined();

    const voucherSigner = await recoverTypedDataAddress({
      ...voucherTypedData(channelId, BigInt(deposit.voucher.maxClaimableAmount), CHAIN_ID),
      signature: deposit.voucher.signature as Hex,
    });
    expect(voucherSigner).toBe(payer.address);
    const auth = deposit.deposit.authorization.erc3009Authorization!;
    const depositSigner = await recoverTypedDataAddress({
      domain: { name: 'USD Coin', version: '2', chainId: CHAIN_ID, verifyingContract: token },
      types: receiveWithAuthorizationTypes,
      primaryType: 'ReceiveWithAuthorization',
      message: {
        from: payer.address,
        to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        value: 10_000n,
        validAfter: BigInt(auth.validAfter),
        validBefore: BigInt(auth.validBefore),
        nonce: erc3009DepositNonce(channelId, auth.salt),
      },
      signature: auth.signature as Hex,
    });
    expect(depositSigner).toBe(payer.address);
  });
});
