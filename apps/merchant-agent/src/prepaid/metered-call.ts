import { createHash } from 'node:crypto';
import { payerProofProblem, spendMessage } from '@mp/chain';
import { PrepaidLedgerError, type PrepaidLedger } from './prepaid-ledger';

/** A payer's proof for one metered call: its EIP-191 signature over spendMessage(resource, callId, deadline). */
export interface SpendProof {
  payer: string;
  deadline: string;
  signature: string;
}

export interface MeteredCall<T> {
  /** what is sold (`a2a:wordcount`, `mcp:tools/wordcount`): the proof names it */
  resource: string;
  /** the buyer's id of this call (an A2A message id, an MCP callId): the proof names it, the ledger holds under it */
  callId: string;
  proof: SpendProof;
  unitPrice: bigint;
  maxUnits: number;
  /** the work, and how many units it did */
  run(): { output: T; units: number };
}

export interface MeteredReceipt {
  payer: string;
  units: number;
  unitPrice: string;
  charged: string;
  /** the balance left, when the ledger could say */
  available?: string;
}

export type MeteredOutcome<T> =
  | { served: true; output: T; receipt: MeteredReceipt }
  | { served: false; error: 'proof_invalid'; detail: string }
  | { served: false; error: 'insufficient_balance'; detail: string; shortfall: { available: string; required: string; topUpNeeded: string } }
  | { served: false; error: 'ledger_unavailable'; detail: string };

/** How long a metered call's hold may stay open: the work is quick, a crash leaves the reservation this long. */
const HOLD_SECONDS = 120;

/**
 * One call of a metered resource paid from the caller's prepaid balance: the payer's proof for this very call, a
 * hold for the most it may cost, the work, a capture of what it did cost (the rest released), and only then the
 * output. The hold's id is derived from the payer and the call id, so the same call again is charged once.
 */
export async function meteredCall<T>(ledger: PrepaidLedger, call: MeteredCall<T>): Promise<MeteredOutcome<T>> {
  const payer = call.proof.payer.toLowerCase();
  const { deadline, signature } = call.proof;
  const problem = await payerProofProblem(payer, spendMessage(call.resource, call.callId, deadline), signature, deadline, new Date(), 'prepaid');
  if (problem) return { served: false, error: 'proof_invalid', detail: `Not charged: ${problem}.` };

  const holdId = `${call.resource.replace(/[^A-Za-z0-9_:.-]/g, '.')}:${createHash('sha256').update(`${payer}\n${call.callId}`).digest('hex').slice(0, 40)}`;
  const most = call.unitPrice * BigInt(call.maxUnits);
  try {
    const hold = await ledger.hold(holdId, payer, most.toString(), HOLD_SECONDS);
    if (!hold.held) {
      const { available, required, topUpNeeded } = hold;
      const detail = `the prepaid balance has ${available} of the ${required} atomic units this call may cost: top it up`;
      return { served: false, error: 'insufficient_balance', detail, shortfall: { available, required, topUpNeeded } };
    }
    let done: { output: T; units: number };
    try {
      done = call.run();
    } catch (error) {
      await ledger.release(holdId);
      throw error;
    }
    const units = Math.min(Math.max(done.units, 1), call.maxUnits);
    const charged = call.unitPrice * BigInt(units);
    // captured before anything is delivered: what the buyer gets has been paid for
    await ledger.capture(holdId, charged.toString());
    const available = await ledger.balance(payer).then(
      (balance) => balance.available,
      () => undefined, // paid and captured: delivered even if the balance cannot be read now
    );
    const receipt = { payer, units, unitPrice: call.unitPrice.toString(), charged: charged.toString(), ...(available !== undefined && { available }) };
    return { served: true, output: done.output, receipt };
  } catch (error) {
    if (error instanceof PrepaidLedgerError)
      return { served: false, error: 'ledger_unavailable', detail: `Not served: ${error.message}. Nothing more than a hold that lapses was taken.` };
    throw error;
  }
}
