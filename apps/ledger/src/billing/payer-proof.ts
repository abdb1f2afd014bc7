import { payerProofProblem } from '@mp/chain';
import { ProblemError } from '@mp/platform';

// The messages and the check are @mp/chain's: the merchant agent checks its payers' proofs the same way.
export { cancelMessage, MAX_PROOF_LIFETIME_S, statusMessage } from '@mp/chain';

/**
 * Checks that `signature` is the payer's over `message` and that the deadline is in the future and at most
 * MAX_PROOF_LIFETIME_S ahead of `now`; a problem (401 payer_proof_invalid) naming what is wrong otherwise.
 */
export async function assertPayerProof(payer: string, message: string, signature: string, deadline: string, now: Date): Promise<void> {
  const problem = await payerProofProblem(payer, message, signature, deadline, now);
  if (problem) throw new ProblemError('payer_proof_invalid', problem);
}
