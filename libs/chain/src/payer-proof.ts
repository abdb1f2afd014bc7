import { verifyMessage, type Hex } from 'viem';

/** How far ahead a proof's deadline may lie: a signature is a bearer token until then, so not long. */
export const MAX_PROOF_LIFETIME_S = 600;

/** The two ways a subscription may be canceled, as a payer's cancel message names them. */
export type ProofCancelAt = 'period_end' | 'immediately';

/**
 * What a payer signs (EIP-191 personal_sign, by the subscription's payer address) to prove it is that payer without
 * the merchant's API key. Each message names what it allows and a deadline (unix seconds) that bounds how long a
 * leaked signature works.
 */
export const cancelMessage = (at: ProofCancelAt, subscriptionId: string, deadline: string) => `mp-subscription:cancel:${at}:${subscriptionId}:${deadline}`;
export const statusMessage = (subscriptionId: string, deadline: string) => `mp-subscription:status:${subscriptionId}:${deadline}`;
/** To be served `resource` (a route or a skill, as the merchant names it) as an entitled payer of `product`. */
export const accessMessage = (product: string, resource: string, deadline: string) => `mp-subscription:access:${product}:${resource}:${deadline}`;

/**
 * To spend from the payer's prepaid balance on one call: `resource` (a skill, a tool) and the call's own id, so the
 * signature pays for that call only (the merchant holds and captures under the id: the same call again costs nothing).
 */
export const spendMessage = (resource: string, callId: string, deadline: string) => `mp-prepaid:spend:${resource}:${callId}:${deadline}`;

/** Whose proof it is, in the refusal: a subscription's payer, or the payer of a prepaid balance. */
export type ProofOf = 'subscription' | 'prepaid';

const REFUSALS: Record<ProofOf, { notAddress: string; otherSigner: (payer: string, message: string) => string }> = {
  subscription: {
    notAddress: 'this subscription has no address payer to sign: the merchant cancels it',
    otherSigner: (_payer, message) => `the signature is not the subscription's payer's over "${message}"`,
  },
  prepaid: {
    notAddress: 'the payer is not an address that can sign',
    otherSigner: (payer, message) => `the signature over "${message}" is not by the payer ${payer}`,
  },
};

/**
 * Why `signature` is no proof by `payer` over `message` with this deadline at `now` (the deadline passed, too far
 * ahead, not an address, another signer); undefined when it is one. EOAs only: a smart-wallet payer acts through
 * the merchant. `of` words the refusal for what the proof is about.
 */
export async function payerProofProblem(
  payer: string,
  message: string,
  signature: string,
  deadline: string,
  now: Date,
  of: ProofOf = 'subscription',
): Promise<string | undefined> {
  const nowS = Math.floor(now.getTime() / 1000);
  const deadlineS = Number(deadline);
  if (!/^[0-9]{1,12}$/.test(deadline)) return `the proof's deadline ${JSON.stringify(deadline)} is not unix seconds`;
  if (deadlineS <= nowS) return `the proof's deadline ${deadline} has passed (now ${nowS})`;
  if (deadlineS > nowS + MAX_PROOF_LIFETIME_S) return `the proof's deadline ${deadline} is more than ${MAX_PROOF_LIFETIME_S} s ahead`;
  if (!/^0x[0-9a-f]{40}$/.test(payer)) return REFUSALS[of].notAddress;
  const valid = await verifyMessage({ address: payer as Hex, message, signature: signature as Hex }).catch(() => false);
  if (!valid) return REFUSALS[of].otherSigner(payer, message);
  return undefined;
}
