import { accessMessage, payerProofProblem } from '@mp/chain';
import { fetchWithTimeout } from '../facilitator-fetch';
import type { SubscriptionConfig } from '../merchant.config';

/** What the ledger answers on GET /entitlements (apps/ledger billing/entitlements.ts). */
export interface Entitlement {
  entitled: boolean;
  subscriptionId: string | null;
  state: string | null;
  paidThrough: string | null;
  reason: 'paid_period' | 'trial' | 'no_subscription' | 'not_paid' | 'canceled' | 'ended';
}

/** A payer's proof that it is who it says: its EIP-191 signature over accessMessage(product, resource, deadline). */
export interface PayerProof {
  payer: string;
  deadline: string;
  signature: string;
}

export type ProvenPayer = { ok: true; payer: string } | { ok: false; problem: string };

/** Thrown when the ledger cannot tell (unreachable, refused our key): never taken for "not entitled". */
export class LedgerUnavailableError extends Error {
  constructor(detail: string) {
    super(`the ledger cannot tell the entitlement: ${detail}`);
    this.name = 'LedgerUnavailableError';
  }
}

/**
 * Whether a payer is served the subscription's product: the payer proven by its signature (the same proof and
 * message shapes as the ledger's payer-signed endpoints, @mp/chain payer-proof), then the ledger asked with the
 * merchant's API key. The ledger alone decides (a paid period or the trial, never the state alone).
 */
export class SubscriptionEntitlements {
  private readonly fetch: typeof fetch;

  constructor(
    readonly subscription: SubscriptionConfig,
    timeoutMs: number,
  ) {
    this.fetch = fetchWithTimeout(timeoutMs);
  }

  /** The proven payer (lowercase address) for `resource`, or why the proof does not prove it. */
  async prove(proof: PayerProof, resource: string, now = new Date()): Promise<ProvenPayer> {
    const payer = proof.payer.toLowerCase();
    const problem = await payerProofProblem(payer, accessMessage(this.subscription.product, resource, proof.deadline), proof.signature, proof.deadline, now);
    return problem ? { ok: false, problem } : { ok: true, payer };
  }

  async of(payer: string): Promise<Entitlement> {
    const url = new URL('/entitlements', `${this.subscription.ledgerUrl}/`);
    url.searchParams.set('payer', payer);
    url.searchParams.set('product', this.subscription.product);
    let response: Response;
    try {
      response = await this.fetch(url, { headers: { authorization: `Bearer ${this.subscription.apiKey}`, accept: 'application/json' } });
    } catch (error) {
      throw new LedgerUnavailableError(`no answer (${(error as Error).message})`);
    }
    const body = (await response.json().catch(() => undefined)) as Entitlement | undefined;
    if (response.status !== 200 || typeof body?.entitled !== 'boolean') throw new LedgerUnavailableError(`it answered ${response.status}`);
    return body;
  }
}

/**
 * The payer proof of a request: `Payer-Proof: payer="0x…", deadline="<unix s>", signature="0x…"`. Undefined when
 * there is none; a problem when there is one we cannot read.
 */
export function payerProofHeader(value: string | undefined): PayerProof | { problem: string } | undefined {
  if (value === undefined) return undefined;
  const params = new Map([...value.matchAll(/([a-z]+)\s*=\s*"([^"]*)"/gi)].map((m) => [m[1]!.toLowerCase(), m[2]!]));
  const payer = params.get('payer');
  const deadline = params.get('deadline');
  const signature = params.get('signature');
  if (!payer || !/^0x[0-9a-fA-F]{40}$/.test(payer)) return { problem: 'Payer-Proof: payer must be a 0x address' };
  if (!deadline || !/^[0-9]{1,12}$/.test(deadline)) return { problem: 'Payer-Proof: deadline must be unix seconds' };
  if (!signature || !/^0x[0-9a-fA-F]+$/.test(signature)) return { problem: 'Payer-Proof: signature must be 0x hex' };
  return { payer, deadline, signature };
}
