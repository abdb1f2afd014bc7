import { verifyMessage, type Hex } from 'viem';
import { ProblemError } from '@mp/platform';
import type { CancelAt } from './subscription';

/** How far ahead a proof's deadline may lie: a signature is a bearer token until then, so not long. */
export const MAX_PROOF_LIFETIME_S = 600;

/**
 * What the payer signs (EIP-191 personal_sign, by the subscription's payer address) to act on a subscription without
 * the merchant's API key. The deadline (unix seconds) bounds how long a leaked signature works.
 */
export const cancelMessage = (at: CancelAt, subscriptionId: string, deadline: string) => `mp-subscription:cancel:${at}:${subscriptionId}:${deadline}`;
export const statusMessage = (subscriptionId: string, deadline: string) => `mp-subscription:status:${subscriptionId}:${deadline}`;

/**
 * Checks that `signature` is the payer's over `message` and that the deadline is in the future and at most
 * MAX_PROOF_LIFETIME_S ahead of `now`; a problem (401 payer_proof_invalid) naming what is wrong otherwise. EOAs only:
 * a smart-wallet payer cancels through the merchant.
 */
export async function assertPayerProof(payer: string, message: string, signature: string, deadline: string, now: Date): Promise<void> {
  const nowS = Math.floor(now.getTime() / 1000);
  const deadlineS = Number(deadline);
  if (deadlineS <= nowS) throw new ProblemError('payer_proof_invalid', `the proof's deadline ${deadline} has passed (now ${nowS})`);
  if (deadlineS > nowS + MAX_PROOF_LIFETIME_S)
    throw new ProblemError('payer_proof_invalid', `the proof's deadline ${deadline} is more than ${MAX_PROOF_LIFETIME_S} s ahead`);
  if (!/^0x[0-9a-f]{40}$/.test(payer)) throw new ProblemError('payer_proof_invalid', 'this subscription has no address payer to sign: the merchant cancels it');
  const valid = await verifyMessage({ address: payer as Hex, message, signature: signature as Hex }).catch(() => false);
  if (!valid) throw new ProblemError('payer_proof_invalid', `the signature is not the subscription's payer's over "${message}"`);
}
