import { encodeFunctionData } from 'viem';
import { multicall3Abi } from '@mp/chain';
import { UPTO_PERMIT2_PROXY_ADDRESS, type UptoPermit } from '@mp/x402';
import { settleData, uptoSettleSender } from './permit2-upto.rail';

const permit: UptoPermit = {
  network: 'eip155:31337',
  asset: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  owner: '0x976EA74026E726554dB657fA54763abd0C3a0aa9',
  maxAmount: 50_000n,
  spender: UPTO_PERMIT2_PROXY_ADDRESS,
  nonce: 12345678901234567890n,
  deadline: 1_900_000_000n,
  witness: { to: '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc', facilitator: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', validAfter: 0n },
  signature: `0x${'11'.repeat(65)}`,
};

describe('uptoSettleSender', () => {
  it("reads the only sender the proxy accepts from a recorded settle call: its witness's facilitator", () => {
    expect(uptoSettleSender(settleData(permit, 1_234n))).toBe(permit.witness.facilitator);
  });

  it('names no sender for calldata that is not an upto settle call', () => {
    expect(uptoSettleSender(encodeFunctionData({ abi: multicall3Abi, functionName: 'aggregate3', args: [[]] }))).toBeUndefined();
    expect(uptoSettleSender('0x')).toBeUndefined();
  });
});
