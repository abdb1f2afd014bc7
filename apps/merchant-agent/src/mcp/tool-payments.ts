import { Logger } from '@nestjs/common';
import type { MppFacilitatorClient, MppSettlement, MppTerms } from '@mp/clients';
import { serializeCredential, toProblemDetails, type Credential } from '@mp/mpp';
import { isObject } from './is-object';
import { paymentError, paymentUnavailable } from './payment-errors';

/** Where MCP carries the credential (request `params._meta`) and the receipt (result `_meta`). */
export const CREDENTIAL_META_KEY = 'org.paymentauth/credential';
export const RECEIPT_META_KEY = 'org.paymentauth/receipt';

export type ToolReceipt = Extract<MppSettlement, { ok: true }>['receipt'];

/** Charges one tool call through the facilitator, which issues the challenges and settles the credentials. */
export class ToolPayments {
  private readonly logger = new Logger('McpToolPayments');

  constructor(private readonly facilitator: MppFacilitatorClient) {}

  /** Settles the credential in `meta` against `terms` and returns the receipt; throws the binding's JSON-RPC error otherwise. */
  async charge(terms: MppTerms, meta: Record<string, unknown> | undefined): Promise<ToolReceipt> {
    const presented = meta?.[CREDENTIAL_META_KEY];
    if (presented === undefined) {
      const problem = toProblemDetails('payment-required', { detail: `this tool is paid: call it again with a credential in _meta["${CREDENTIAL_META_KEY}"]` });
      throw paymentError(402, problem, await this.freshChallenges(terms));
    }
    const credential = toHeaderValue(presented);
    if (credential === undefined) {
      const problem = toProblemDetails('malformed-credential', {
        detail: 'the credential must be an object with a challenge (whose request is an object) and a payload',
      });
      throw paymentError(problem.status, problem, await this.freshChallenges(terms));
    }
    const settlement = await this.ask(() => this.facilitator.settle(credential, terms));
    if (!settlement.ok) {
      const { challenges = [], ...problem } = settlement.problem;
      throw paymentError(settlement.status, problem, challenges);
    }
    return settlement.receipt;
  }

  private async freshChallenges(terms: MppTerms) {
    return (await this.ask(() => this.facilitator.challenges(terms))).challenges;
  }

  /** Any failure to get an answer (facilitator down, bad key, invalid terms) is logged here and answered -32603, without details. */
  private async ask<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      this.logger.error(`the facilitator did not answer a tool payment: ${error instanceof Error ? error.message : String(error)}`);
      throw paymentUnavailable();
    }
  }
}

/** The credential object as the `Payment` header value the facilitator reads; undefined when it is not one. */
function toHeaderValue(value: unknown): string | undefined {
  if (!isObject(value) || !('payload' in value) || !isObject(value.challenge) || !isObject(value.challenge.request)) return undefined;
  // Parsed from JSON, so JCS can encode it; the facilitator checks the rest (id binding, fields, payload).
  return serializeCredential(value as unknown as Credential);
}
