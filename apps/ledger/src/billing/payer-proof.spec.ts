import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ProblemError } from '@mp/platform';
import { assertPayerProof, cancelMessage, statusMessage } from './payer-proof';

const NOW = new Date('2027-01-31T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const payer = privateKeyToAccount(generatePrivateKey());
const address = payer.address.toLowerCase();

async function refusal(promise: Promise<void>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  expect((error as ProblemError).code).toBe('payer_proof_invalid');
  return (error as ProblemError).message;
}

describe('the payer proof', () => {
  it('names the exact messages the payer signs', () => {
    expect(cancelMessage('immediately', 'sub_AAAAAAAAAAAAAAAA', '1801234567')).toBe('mp-subscription:cancel:immediately:sub_AAAAAAAAAAAAAAAA:1801234567');
    expect(statusMessage('sub_AAAAAAAAAAAAAAAA', '1801234567')).toBe('mp-subscription:status:sub_AAAAAAAAAAAAAAAA:1801234567');
  });

  it("takes the payer's signature over the message until the deadline", async () => {
    const deadline = String(NOW_S + 600);
    const message = cancelMessage('period_end', 'sub_AAAAAAAAAAAAAAAA', deadline);
    await expect(assertPayerProof(address, message, await payer.signMessage({ message }), deadline, NOW)).resolves.toBeUndefined();
  });

  it('refuses another signer, another message, a passed or too distant deadline, and a payer that is not an address', async () => {
    const deadline = String(NOW_S + 60);
    const message = cancelMessage('period_end', 'sub_AAAAAAAAAAAAAAAA', deadline);
    const stranger = privateKeyToAccount(generatePrivateKey());
    expect(await refusal(assertPayerProof(address, message, await stranger.signMessage({ message }), deadline, NOW))).toMatch(/not the subscription's payer's/);
    const other = cancelMessage('immediately', 'sub_AAAAAAAAAAAAAAAA', deadline);
    expect(await refusal(assertPayerProof(address, other, await payer.signMessage({ message }), deadline, NOW))).toMatch(/not the subscription's payer's/);
    const passed = String(NOW_S);
    expect(await refusal(assertPayerProof(address, message, await payer.signMessage({ message }), passed, NOW))).toMatch(/has passed/);
    const far = String(NOW_S + 601);
    expect(await refusal(assertPayerProof(address, message, await payer.signMessage({ message }), far, NOW))).toMatch(/more than 600 s ahead/);
    expect(await refusal(assertPayerProof('cus_123', message, await payer.signMessage({ message }), deadline, NOW))).toMatch(/no address payer/);
  });
});
