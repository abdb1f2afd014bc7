import { encodeAbiParameters, getAddress, hashTypedData, keccak256, recoverTypedDataAddress, zeroAddress, type Hex } from 'viem';
import { Address, Secp256k1, Signature } from 'ox';
import { createChallenge } from '../challenge';
import { decodeReceipt, encodeReceipt } from '../receipt';
import { toProblemDetails } from '../problems';
import {
  checkEvmSession,
  computeChannelId,
  encodeNeedVoucherEvent,
  evmSessionReceipt,
  evmSessionRequestProblems,
  isLowS,
  normalizeEvmSessionRequest,
  openAuthorizationNonce,
  parseEvmSessionPayload,
  parseEvmSessionReceipt,
  parseNeedVoucher,
  sessionProblemForRevert,
  topUpAuthorizationNonce,
  voucherTypedData,
  MAX_UINT128,
  SECP256K1_HALF_ORDER,
} from './evm-session';

const SECRET = 'test-secret-key-at-least-32-bytes-long!!';
// anvil's first key; ox signs here because the protocol library's specs use no viem account (lint boundary)
const payerKey = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const payer = {
  address: Address.fromPublicKey(Secp256k1.getPublicKey({ privateKey: payerKey }), { checksum: true }),
  signTypedData: async (typed: Parameters<typeof hashTypedData>[0]) => Signature.toHex(Secp256k1.sign({ payload: hashTypedData(typed), privateKey: payerKey })),
};
const token = getAddress('0x5fbdb2315678afecb367f032d93f642f64180aa3');
const escrow = getAddress('0xe7f1725e7734ce288f8367e1bb143e90bb3f0512');
const recipient = getAddress('0x742d35cc6634c0532925a3b844bc9e7595f8fe00');
const salt = `0x${'ab'.repeat(32)}` as Hex;
const chainId = 31337;
const now = 1_800_000_000n;

const request = (details: Record<string, unknown> = {}) =>
  normalizeEvmSessionRequest({
    amount: '100',
    currency: token.toLowerCase(),
    recipient: recipient.toLowerCase(),
    unitType: 'llm_token',
    suggestedDeposit: '5000000',
    methodDetails: { chainId, escrowContract: escrow.toLowerCase(), ...details },
  } as never);

const challengeFor = (req: Record<string, unknown>) => createChallenge(SECRET, { realm: 'api.example', method: 'evm', intent: 'session', request: req });

const terms = { payer: payer.address, payee: recipient, token, salt };
const channelId = computeChannelId(terms, escrow, chainId);
const sign = (cumulativeAmount: bigint, id: Hex = channelId) =>
  payer.signTypedData(voucherTypedData({ chainId, escrowContract: escrow }, { channelId: id, cumulativeAmount }));
const source = `did:pkh:eip155:${chainId}:${payer.address}`;
const hash = `0x${'11'.repeat(32)}`;

describe('evm session: request', () => {
  it('normalizes: checksummed addresses, credentialTypes ["hash"] and minVoucherDelta "0" made explicit', () => {
    expect(request()).toEqual({
      amount: '100',
      currency: token,
      recipient,
      unitType: 'llm_token',
      suggestedDeposit: '5000000',
      methodDetails: { chainId, escrowContract: escrow, minVoucherDelta: '0', credentialTypes: ['hash'] },
    });
  });

  it.each([
    [{ amount: '0' }, 'amount'],
    [{ currency: 'usdc' }, 'currency'],
    [{ methodDetails: { chainId } }, 'escrowContract'],
    [{ methodDetails: { chainId: '31337', escrowContract: escrow } }, 'chainId'],
    [{ methodDetails: { chainId, escrowContract: escrow, credentialTypes: ['hash', 'hash'] } }, 'must not repeat'],
    [{ methodDetails: { chainId, escrowContract: escrow, credentialTypes: ['transaction'] } }, 'credentialTypes'],
    [{ methodDetails: { chainId, escrowContract: escrow, credentialTypes: ['permit2'] } }, 'does not implement permit2'],
    [{ methodDetails: { chainId, escrowContract: escrow, splits: [] } }, 'splits'],
    [{ suggestedDeposit: (MAX_UINT128 + 1n).toString() }, 'uint128'],
  ])('refuses %j', (change, named) => {
    expect(evmSessionRequestProblems({ ...request(), ...change }).join('; ')).toContain(named);
  });
});

describe('evm session: ids, nonces, typed data', () => {
  it('computes the channel id as keccak256(abi.encode(payer, payee, token, salt, authorizedSigner, escrow, chainId))', () => {
    const expected = keccak256(
      encodeAbiParameters(
        [{ type: 'address' }, { type: 'address' }, { type: 'address' }, { type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }],
        [payer.address, recipient, token, salt, zeroAddress, escrow, 31337n],
      ),
    );
    expect(channelId).toBe(expected);
    expect(computeChannelId({ ...terms, authorizedSigner: recipient }, escrow, chainId)).not.toBe(channelId);
    expect(computeChannelId(terms, escrow, 8453)).not.toBe(channelId);
  });

  it('derives the relayed open and top-up nonces from the terms', () => {
    expect(openAuthorizationNonce(terms)).toBe(
      keccak256(
        encodeAbiParameters(
          [{ type: 'address' }, { type: 'address' }, { type: 'address' }, { type: 'bytes32' }, { type: 'address' }],
          [payer.address, recipient, token, salt, zeroAddress],
        ),
      ),
    );
    expect(topUpAuthorizationNonce(channelId, 5n, payer.address, salt)).not.toBe(topUpAuthorizationNonce(channelId, 6n, payer.address, salt));
  });

  it('binds the voucher to the escrow: domain "EVM Payment Channel" v1, Voucher(bytes32 channelId,uint128 cumulativeAmount)', async () => {
    const typed = voucherTypedData({ chainId, escrowContract: escrow }, { channelId, cumulativeAmount: 250_000n });
    expect(typed.domain).toEqual({ name: 'EVM Payment Channel', version: '1', chainId, verifyingContract: escrow });
    const signature = await sign(250_000n);
    expect(await recoverTypedDataAddress({ ...typed, signature })).toBe(payer.address);
    const elsewhere = voucherTypedData({ chainId, escrowContract: token }, { channelId, cumulativeAmount: 250_000n });
    expect(hashTypedData(elsewhere)).not.toBe(hashTypedData(typed));
    expect(() => voucherTypedData({ chainId, escrowContract: escrow }, { channelId, cumulativeAmount: MAX_UINT128 + 1n })).toThrow(RangeError);
  });

  it('tells low-s 65-byte signatures from high-s and compact ones', async () => {
    const signature = await sign(1n);
    expect(isLowS(signature)).toBe(true);
    const highS = (SECP256K1_HALF_ORDER + 1n).toString(16).padStart(64, '0');
    expect(isLowS(`${signature.slice(0, 66)}${highS}1b` as Hex)).toBe(false);
    expect(isLowS(signature.slice(0, 130) as Hex)).toBe(false);
  });
});

describe('evm session: credentials', () => {
  const challenge = challengeFor(request({ credentialTypes: ['hash', 'authorization'] }));

  it('checks a hash open: the payer comes from source, the channel id from the terms', async () => {
    const payload = { action: 'open', type: 'hash', channelId, hash, cumulativeAmount: '0', signature: await sign(0n), salt };
    const result = checkEvmSession(challenge, payload, source, now);
    expect(result).toMatchObject({
      ok: true,
      value: { checked: { action: 'open', type: 'hash', channelId, terms: { payer: payer.address, authorizedSigner: zeroAddress } } },
    });
    expect(checkEvmSession(challenge, payload, undefined, now)).toMatchObject({ ok: false, error: { code: 'invalid-payload' } });
    expect(checkEvmSession(challenge, payload, `did:pkh:eip155:1:${payer.address}`, now)).toMatchObject({
      ok: false,
      error: { detail: expect.stringContaining('chain 31337') },
    });
    const other = `did:pkh:eip155:${chainId}:${recipient}`;
    expect(checkEvmSession(challenge, payload, other, now)).toMatchObject({
      ok: false,
      error: { code: 'verification-failed', detail: expect.stringContaining('not the id') },
    });
  });

  const authorization = (over: Record<string, string> = {}) => ({
    from: payer.address,
    to: escrow,
    value: '1000000',
    validAfter: '0',
    validBefore: (now + 600n).toString(),
    nonce: openAuthorizationNonce(terms),
    ...over,
  });

  it('checks a relayed open: to = escrow, the nonce formula, the window', async () => {
    const payload = {
      action: 'open',
      type: 'authorization',
      channelId,
      authorization: authorization(),
      signature: `0x${'22'.repeat(65)}`,
      cumulativeAmount: '0',
      voucherSignature: await sign(0n),
      salt,
    };
    const result = checkEvmSession(challenge, payload, undefined, now);
    expect(result.ok && result.value.checked).toMatchObject({
      action: 'open',
      type: 'authorization',
      deposit: { deposit: 1_000_000n, terms: { payer: payer.address } },
    });
    expect(checkEvmSession(challenge, { ...payload, authorization: authorization({ to: recipient }) }, undefined, now)).toMatchObject({
      ok: false,
      error: { detail: expect.stringContaining('not the escrow') },
    });
    expect(checkEvmSession(challenge, { ...payload, authorization: authorization({ nonce: hash }) }, undefined, now)).toMatchObject({
      ok: false,
      error: { detail: expect.stringContaining('nonce') },
    });
    expect(checkEvmSession(challenge, { ...payload, authorization: authorization({ validBefore: now.toString() }) }, undefined, now)).toMatchObject({
      ok: false,
      error: { code: 'payment-expired' },
    });
    const hashOnly = challengeFor(request());
    expect(checkEvmSession(hashOnly, payload, undefined, now)).toMatchObject({
      ok: false,
      error: { detail: expect.stringContaining('does not accept authorization') },
    });
  });

  it('checks a relayed top-up: additionalDeposit = value, nonce = keccak256(abi.encode(channelId, value, from, salt))', () => {
    const topUpSalt = `0x${'cd'.repeat(32)}`;
    const auth = authorization({ value: '500', nonce: topUpAuthorizationNonce(channelId, 500n, payer.address, topUpSalt as Hex) });
    const payload = {
      action: 'topUp',
      type: 'authorization',
      channelId,
      authorization: auth,
      signature: `0x${'22'.repeat(65)}`,
      additionalDeposit: '500',
      salt: topUpSalt,
    };
    expect(checkEvmSession(challenge, payload, undefined, now)).toMatchObject({
      ok: true,
      value: { checked: { deposit: { action: 'topUp', additionalDeposit: 500n } } },
    });
    expect(checkEvmSession(challenge, { ...payload, additionalDeposit: '501' }, undefined, now)).toMatchObject({ ok: false });
    expect(checkEvmSession(challenge, { ...payload, salt }, undefined, now)).toMatchObject({ ok: false, error: { detail: expect.stringContaining('nonce') } });
  });

  it('parses a voucher (with an optional deposit that runs first) and a close', async () => {
    const voucher = { action: 'voucher', channelId, cumulativeAmount: '300', signature: await sign(300n) };
    expect(checkEvmSession(challenge, voucher, undefined, now)).toMatchObject({ ok: true, value: { checked: { action: 'voucher', cumulativeAmount: 300n } } });
    const topUpSalt = `0x${'cd'.repeat(32)}` as Hex;
    const deposit = {
      action: 'topUp',
      type: 'authorization',
      authorization: authorization({ value: '500', nonce: topUpAuthorizationNonce(channelId, 500n, payer.address, topUpSalt) }),
      signature: `0x${'22'.repeat(65)}`,
      salt: topUpSalt,
    };
    expect(checkEvmSession(challenge, { ...voucher, deposit }, undefined, now)).toMatchObject({
      ok: true,
      value: { checked: { deposit: { action: 'topUp' } } },
    });
    const close = { action: 'close', channelId, cumulativeAmount: '300', signature: await sign(300n) };
    expect(checkEvmSession(challenge, close, undefined, now)).toMatchObject({ ok: true, value: { checked: { action: 'close' } } });
  });

  it.each([
    [{ action: 'pay' }, 'payload.action'],
    [{ action: 'open', type: 'permit2' }, 'permit2 is not implemented'],
    [{ action: 'voucher', channelId, cumulativeAmount: '1', signature: `0x${'11'.repeat(64)}` }, '65-byte'],
    [{ action: 'voucher', channelId, cumulativeAmount: (MAX_UINT128 + 1n).toString(), signature: `0x${'11'.repeat(65)}` }, 'uint128'],
    [{ action: 'voucher', channelId, cumulativeAmount: '-1', signature: `0x${'11'.repeat(65)}` }, 'cumulativeAmount'],
    [{ action: 'close', channelId: '0x12', cumulativeAmount: '1', signature: `0x${'11'.repeat(65)}` }, 'channelId'],
    [{ action: 'close', channelId, cumulativeAmount: '1', signature: `0x${'11'.repeat(65)}`, extra: 1 }, 'extra'],
  ])('refuses the malformed payload %j', (payload, named) => {
    const result = parseEvmSessionPayload(payload);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(`${result.error.code} ${result.error.detail}`).toContain(named);
  });

  it('refuses a credential for another channel than the one the challenge resumes', async () => {
    const resuming = challengeFor(request({ channelId: hash }));
    const voucher = { action: 'voucher', channelId, cumulativeAmount: '300', signature: await sign(300n) };
    expect(checkEvmSession(resuming, voucher, undefined, now)).toMatchObject({ ok: false, error: { detail: expect.stringContaining('resumes channel') } });
  });
});

describe('evm session: receipt, SSE, problems', () => {
  it('round-trips the receipt through the Payment-Receipt header', () => {
    const receipt = evmSessionReceipt({
      challengeId: 'ch_1',
      channelId,
      acceptedCumulative: 300n,
      spent: 200n,
      chainId,
      units: 2n,
      timestamp: new Date('2026-12-02T12:00:00Z'),
    });
    expect(receipt).toEqual({
      method: 'evm',
      intent: 'session',
      status: 'success',
      timestamp: '2026-12-02T12:00:00.000Z',
      reference: channelId,
      challengeId: 'ch_1',
      channelId,
      acceptedCumulative: '300',
      spent: '200',
      chainId,
      units: '2',
    });
    const decoded = decodeReceipt(encodeReceipt(receipt));
    expect(decoded.ok && parseEvmSessionReceipt(decoded.value)).toEqual({ ok: true, value: receipt });
    expect(parseEvmSessionReceipt({ ...receipt, method: 'tempo' }).ok).toBe(false);
  });

  it('writes and reads payment-need-voucher', () => {
    const frame = encodeNeedVoucherEvent({ channelId, requiredCumulative: 400n, acceptedCumulative: 300n, deposit: 1000n });
    expect(frame).toBe(
      `event: payment-need-voucher\ndata: {"channelId":"${channelId}","requiredCumulative":"400","acceptedCumulative":"300","deposit":"1000"}\n\n`,
    );
    const data = frame.split('\n')[1]!.slice('data: '.length);
    expect(parseNeedVoucher(data)).toEqual({ ok: true, value: { channelId, requiredCumulative: '400', acceptedCumulative: '300', deposit: '1000' } });
    expect(parseNeedVoucher('{"channelId":1}').ok).toBe(false);
  });

  it('maps escrow reverts to session problem types, never to a selector', () => {
    expect(sessionProblemForRevert('InvalidSignature')).toBe('session/invalid-signature');
    expect(sessionProblemForRevert('ChannelFinalized')).toBe('session/channel-finalized');
    expect(sessionProblemForRevert('ERC20InsufficientBalance')).toBe('session/insufficient-balance');
    expect(sessionProblemForRevert('AmountNotIncreasing')).toBe('session/transaction-reverted');
    expect(sessionProblemForRevert(undefined)).toBe('session/transaction-reverted');
    expect(toProblemDetails('session/transaction-reverted')).toMatchObject({
      status: 409,
      type: 'https://paymentauth.org/problems/session/transaction-reverted',
    });
    expect(toProblemDetails('session/channel-finalized').status).toBe(410);
  });
});
