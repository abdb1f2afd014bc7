import { encodeAbiParameters, getAddress, keccak256, type Hex } from 'viem';
import { createChallenge } from '../challenge';
import { decodeReceipt, encodeReceipt } from '../receipt';
import {
  checkEvmSubscription,
  evmSubscriptionNonce,
  evmSubscriptionReceipt,
  evmSubscriptionRequestProblems,
  MAX_SUBSCRIPTION_AUTHORIZATIONS,
  normalizeEvmSubscriptionRequest,
  signEvmSubscription,
  subscriptionWindows,
  type EvmSubscriptionPayload,
  type SignTypedData,
} from './evm-subscription';

const SECRET = 'test-secret-key-at-least-32-bytes-long!!';
const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const recipient = '0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00';
const payer = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';
const at = (iso: string) => BigInt(Date.parse(iso) / 1000);

const request = (extra: Record<string, unknown> = {}) =>
  normalizeEvmSubscriptionRequest(
    {
      amount: '1000000',
      currency: token,
      periodUnit: 'month',
      periodCount: '1',
      recipient,
      subscriptionExpires: '2027-01-31T00:00:00Z',
      methodDetails: { chainId: 31337 },
      ...extra,
    } as never,
    { decimals: 6, name: 'USD Coin', version: '2' },
  );

const challengeFor = (req: Record<string, unknown>, expires = '2026-01-31T10:05:00Z') =>
  createChallenge(SECRET, { realm: 'shop.example', method: 'evm', intent: 'subscription', request: req, expires });

/** A wallet stand-in: records what it was asked to sign and answers a well-formed signature (the chain checks real ones). */
const recordingSigner = () => {
  const signed: Parameters<SignTypedData>[0][] = [];
  const sign: SignTypedData = async (typedData) => {
    signed.push(typedData);
    return `0x${'11'.repeat(64)}1b` as Hex;
  };
  return { signed, sign };
};

const options = (now: string) => ({ nowSeconds: at(now), maxChallengeLifetimeSeconds: 3600 });

describe('evm subscription: request', () => {
  it('normalizes: checksummed addresses, credential type, decimals and the token domain filled in', () => {
    expect(request()).toEqual({
      amount: '1000000',
      currency: getAddress(token),
      periodUnit: 'month',
      periodCount: '1',
      recipient: getAddress(recipient),
      subscriptionExpires: '2027-01-31T00:00:00Z',
      methodDetails: { chainId: 31337, credentialTypes: ['authorizations'], decimals: 6, domain: { name: 'USD Coin', version: '2' } },
    });
  });

  it.each([
    [{ periodUnit: 'year' }, 'periodUnit'],
    [{ periodCount: '0' }, 'periodCount'],
    [{ periodCount: '1.5' }, 'periodCount'],
    [{ periodUnit: 'month', periodCount: '121' }, 'cannot be represented exactly (count_too_large)'],
    [{ periodUnit: 'day', periodCount: '3651' }, 'count_too_large'],
    [{ subscriptionExpires: undefined }, 'subscriptionExpires'],
    [{ subscriptionExpires: 'tomorrow' }, 'subscriptionExpires'],
    [{ expires: '2026-02-01T00:00:00Z' }, 'expiry belongs in the challenge'],
    [{ recipient: undefined }, 'recipient'],
    [{ amount: '0' }, 'amount'],
    [{ trialDays: 7 }, 'trialDays'],
  ])('refuses %j', (change, named) => {
    const problems = evmSubscriptionRequestProblems({ ...request(), ...change });
    expect(problems.join('; ')).toContain(named);
  });

  it('accepts every exactly representable period', () => {
    for (const [periodUnit, periodCount] of [
      ['day', '1'],
      ['week', '2'],
      ['month', '120'],
      ['day', '3650'],
    ])
      expect(evmSubscriptionRequestProblems({ ...request(), periodUnit, periodCount })).toEqual([]);
  });
});

describe('evm subscription: periods and windows', () => {
  it('monthly from Jan 31: validAfter = start − 1 and validBefore = end, clamped to the month end, never drifting', () => {
    const anchor = at('2026-01-31T10:00:00Z');
    const windows = subscriptionWindows(anchor, { unit: 'month', count: 1 }, new Date('2027-01-31T00:00:00Z'))!;
    expect(windows.map((w) => w.start.toISOString().slice(0, 10))).toEqual([
      '2026-01-31',
      '2026-02-28',
      '2026-03-31',
      '2026-04-30',
      '2026-05-31',
      '2026-06-30',
      '2026-07-31',
      '2026-08-31',
      '2026-09-30',
      '2026-10-31',
      '2026-11-30',
      '2026-12-31',
    ]);
    expect(windows[0]).toMatchObject({ validAfter: anchor - 1n, validBefore: at('2026-02-28T10:00:00Z') });
    expect(windows[1]).toMatchObject({ validAfter: at('2026-02-28T10:00:00Z') - 1n, validBefore: at('2026-03-31T10:00:00Z') });
    // Each window ends where the next starts (+1 for EIP-3009's strict validAfter): no gap, no overlap.
    for (let n = 1; n < windows.length; n += 1) expect(windows[n]!.validAfter + 1n).toBe(windows[n - 1]!.validBefore);
  });

  it('a leap year clamps to Feb 29', () => {
    const windows = subscriptionWindows(at('2028-01-31T00:00:00Z'), { unit: 'month', count: 1 }, new Date('2028-03-01T00:00:00Z'))!;
    expect(windows.map((w) => w.end.toISOString())).toEqual(['2028-02-29T00:00:00.000Z', '2028-03-31T00:00:00.000Z']);
  });

  it('weekly with periodCount 2 is 14 days; a period starting at expiry is not authorized', () => {
    const anchor = at('2026-03-01T00:00:00Z');
    const windows = subscriptionWindows(anchor, { unit: 'week', count: 2 }, new Date('2026-03-29T00:00:00Z'))!;
    expect(windows.map((w) => w.validBefore - w.validAfter - 1n)).toEqual([14n * 86400n, 14n * 86400n]);
  });

  it(`caps a credential at ${MAX_SUBSCRIPTION_AUTHORIZATIONS} periods`, () => {
    const anchor = at('2026-01-01T00:00:00Z');
    expect(subscriptionWindows(anchor, { unit: 'day', count: 1 }, new Date('2026-05-01T00:00:00Z'))!).toHaveLength(120);
    expect(subscriptionWindows(anchor, { unit: 'day', count: 1 }, new Date('2026-05-01T00:00:01Z'))).toBeUndefined();
  });
});

describe('evm subscription: nonces', () => {
  it('is keccak256(abi.encode(string challengeId, string realm, uint256 n)), distinct per period and challenge', () => {
    const challenge = { id: 'abc', realm: 'shop.example' };
    const expected = keccak256(encodeAbiParameters([{ type: 'string' }, { type: 'string' }, { type: 'uint256' }], ['abc', 'shop.example', 3n]));
    expect(evmSubscriptionNonce(challenge, 3)).toBe(expected);
    // a fixed vector, so a change of encoding (e.g. to encodePacked) cannot pass unnoticed
    expect(evmSubscriptionNonce(challenge, 0)).toBe('0x414e63a3c65726ff7b2fe9d39ffe699fd3746c16051fb2bb3f908db8c2c1fd27');
    const nonces = new Set([0, 1, 2].flatMap((n) => [evmSubscriptionNonce(challenge, n), evmSubscriptionNonce({ ...challenge, id: 'abd' }, n)]));
    expect(nonces.size).toBe(6);
    // not the packed encoding: "ab"+"c" and "a"+"bc" must differ
    expect(evmSubscriptionNonce({ id: 'ab', realm: 'c' }, 0)).not.toBe(evmSubscriptionNonce({ id: 'a', realm: 'bc' }, 0));
  });
});

describe('evm subscription: credential checks', () => {
  const now = '2026-01-31T10:00:30Z';
  const anchor = at('2026-01-31T10:00:00Z');
  const req = request();
  const challenge = challengeFor(req);

  const signed = async (change: (p: EvmSubscriptionPayload) => void = () => undefined, anchorSeconds = anchor) => {
    const { sign } = recordingSigner();
    const payload = await signEvmSubscription(challenge, { from: payer, signTypedData: sign, anchorSeconds });
    change(payload);
    return payload;
  };

  it('the client helper signs one TransferWithAuthorization per period, under the token domain, which the checks accept', async () => {
    const { signed: typed, sign } = recordingSigner();
    const payload = await signEvmSubscription(challenge, { from: payer, signTypedData: sign, anchorSeconds: anchor });
    expect(payload.authorizations).toHaveLength(12);
    expect(typed[0]).toMatchObject({
      domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: getAddress(token) },
      primaryType: 'TransferWithAuthorization',
      message: { from: payer, to: getAddress(recipient), value: 1_000_000n, validAfter: anchor - 1n, nonce: evmSubscriptionNonce(challenge, 0) },
    });
    const checked = checkEvmSubscription(challenge, payload, `did:pkh:eip155:31337:${payer}`, options(now));
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(checked.value.anchor.toISOString()).toBe('2026-01-31T10:00:00.000Z');
    expect(checked.value.authorizations.map((a) => a.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(checked.value.authorizations[1]!.validBefore).toBe(at('2026-03-31T10:00:00Z'));
  });

  it.each([
    ['a wrong value (less)', (p: EvmSubscriptionPayload) => (p.authorizations[3]!.value = '999999'), 'payment-insufficient', 'authorizations[3]'],
    ['a wrong value (more)', (p: EvmSubscriptionPayload) => (p.authorizations[0]!.value = '1000001'), 'verification-failed', 'exactly'],
    ['a wrong recipient', (p: EvmSubscriptionPayload) => (p.authorizations[2]!.to = payer), 'verification-failed', 'pays'],
    [
      'a widened window',
      (p: EvmSubscriptionPayload) => (p.authorizations[5]!.validBefore = String(BigInt(p.authorizations[5]!.validBefore) + 1n)),
      'verification-failed',
      'period 5 needs',
    ],
    ['a nonce of another period', (p: EvmSubscriptionPayload) => (p.authorizations[1]!.nonce = p.authorizations[2]!.nonce), 'verification-failed', 'nonce'],
    [
      'a period missing',
      (p: EvmSubscriptionPayload) => p.authorizations.pop(),
      'verification-failed',
      '12 periods start before subscriptionExpires, the credential authorizes 11',
    ],
    ['an extra field', (p: EvmSubscriptionPayload) => Object.assign(p.authorizations[0]!, { from: payer }), 'invalid-payload', 'from'],
  ])('refuses %s', async (_name, change, code, detail) => {
    const checked = checkEvmSubscription(challenge, await signed(change), undefined, options(now));
    expect(checked).toMatchObject({ ok: false, error: { code } });
    if (!checked.ok) expect(checked.error.detail).toContain(detail);
  });

  it('holds the anchor rule: not after now, not after the challenge expires, not before its lifetime', async () => {
    const later = await signed(undefined, at('2026-01-31T10:01:00Z'));
    expect(checkEvmSubscription(challenge, later, undefined, options(now))).toMatchObject({ ok: false, error: { detail: expect.stringContaining('anchor') } });
    const early = await signed(undefined, at('2026-01-31T09:04:59Z'));
    expect(checkEvmSubscription(challenge, early, undefined, options(now))).toMatchObject({ ok: false, error: { detail: expect.stringContaining('anchor') } });
    const edge = await signed(undefined, at('2026-01-31T09:05:00Z'));
    expect(checkEvmSubscription(challenge, edge, undefined, options(now)).ok).toBe(true);
  });

  it('refuses a source that is not the payer, and a challenge that is not a subscription request', async () => {
    const payload = await signed();
    expect(checkEvmSubscription(challenge, payload, `did:pkh:eip155:31337:${recipient}`, options(now))).toMatchObject({ ok: false });
    const charge = createChallenge(SECRET, { realm: 'shop.example', method: 'evm', intent: 'subscription', request: { amount: '1' } });
    expect(checkEvmSubscription(charge, payload, undefined, options(now))).toMatchObject({ ok: false, error: { code: 'invalid-challenge' } });
  });
});

describe('evm subscription: receipt', () => {
  it('is {method evm, reference: tx hash, subscriptionId, timestamp} and round-trips through the receipt codec', () => {
    const receipt = evmSubscriptionReceipt({
      reference: `0x${'ab'.repeat(32)}`,
      subscriptionId: 'q1w2e3r4t5y6u7i8o9p0aa',
      timestamp: new Date('2026-01-31T10:00:31Z'),
      challengeId: 'abc',
    });
    expect(receipt).toEqual({
      status: 'success',
      method: 'evm',
      reference: `0x${'ab'.repeat(32)}`,
      subscriptionId: 'q1w2e3r4t5y6u7i8o9p0aa',
      timestamp: '2026-01-31T10:00:31.000Z',
      challengeId: 'abc',
    });
    const header = encodeReceipt(receipt);
    expect(header).not.toContain('=');
    expect(decodeReceipt(header)).toEqual({ ok: true, value: receipt });
  });
});
