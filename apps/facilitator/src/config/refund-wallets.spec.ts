import { ConfigError } from '@mp/platform';
import type { NetworkConfig } from '@mp/chain';
import { refundWallets } from './facilitator.config';

const merchant = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const refundKey = `0x${'11'.repeat(32)}`;
const settlementKey = `0x${'22'.repeat(32)}`;
const networks = [{ signerKeys: [settlementKey] }] as unknown as NetworkConfig[];

const problems = (raw: string) => {
  try {
    refundWallets(raw, networks);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('REFUND_WALLET_KEYS', () => {
  it('maps merchant ids (lowercased) to keys; unset or empty is no wallet at all', () => {
    expect(refundWallets(JSON.stringify({ [merchant.toUpperCase()]: refundKey }), networks)).toEqual(new Map([[merchant, refundKey]]));
    expect(refundWallets(undefined, networks).size).toBe(0);
    expect(refundWallets(' ', networks).size).toBe(0);
  });

  it('refuses what is not a JSON object of merchant id to private key, naming the merchant and never the key', () => {
    expect(problems('{')).toMatch(/must be a JSON object/);
    expect(problems('["x"]')).toMatch(/must be a JSON object/);
    expect(problems(JSON.stringify({ 'not-a-merchant': refundKey }))).toMatch(/"not-a-merchant" is not a merchant id/);
    const badKey = `0x${'ff'.repeat(32)}`; // above the curve order
    const message = problems(JSON.stringify({ [merchant]: badKey }));
    expect(message).toMatch(new RegExp(`key of merchant ${merchant} is not`));
    expect(message).not.toContain(badKey);
  });

  it("refuses one of the facilitator's settlement wallets", () => {
    const message = problems(JSON.stringify({ [merchant]: settlementKey }));
    expect(message).toMatch(/settlement wallets, which never refund/);
    expect(message).not.toContain(settlementKey);
  });
});
