import { serializeChallenge, type Challenge } from '@mp/mpp';

/**
 * The merchant side of the facilitator's MPP API (no Nest, no HTTP framework): ask for challenges, then hand back
 * the credential a client sent to verify or settle it. A payment failure comes back as the status, problem+json
 * body and fresh WWW-Authenticate values to relay to the client unchanged.
 */

export interface MppOffer {
  method: string;
  intent: string;
  request: Record<string, unknown>;
  description?: string;
}

/** A route's payment terms: the same object issues challenges and checks credentials presented on that route. */
export interface MppTerms {
  realm: string;
  offers: MppOffer[];
  expiresIn?: number;
  digest?: string;
  opaque?: Record<string, string>;
  header?: 'Payment-Authorization';
}

/** A challenge as issued (request as JSON, not base64url): what the MCP binding carries in `error.data.challenges`. */
export interface MppChallenge {
  id: string;
  realm: string;
  method: string;
  intent: string;
  request: Record<string, unknown>;
  expires?: string;
  digest?: string;
  opaque?: string;
  description?: string;
}

/** What a merchant issues a route's challenges with itself (issueChallenges of @mp/mpp): POST /mpp/issuance. */
export interface MppIssuance {
  issuerKey: string;
  realm: string;
  /** the route's offers, made canonical */
  offers: MppOffer[];
  /** seconds a challenge lives when the terms name no `expiresIn` */
  challengeTtlSeconds: number;
}

export interface MppIssued {
  challenges: MppChallenge[];
  wwwAuthenticate: string[];
}

export interface MppProblem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  challengeId?: string;
  challenges?: MppChallenge[];
  [extension: string]: unknown;
}

export type MppSettlement =
  | { ok: true; receipt: Record<string, unknown> & { reference: string; method: string; challengeId?: string }; paymentReceipt: string; payer?: string }
  | { ok: false; status: number; problem: MppProblem; wwwAuthenticate: string[] };

export type MppVerification =
  { ok: true; challengeId: string; method: string; payer?: string } | { ok: false; status: number; problem: MppProblem; wwwAuthenticate: string[] };

/** What the merchant asks before it delivers metered units on an MPP session: `amount` more spent on the channel. */
export interface MppSessionChargeInput {
  channelId: string;
  /** atomic units */
  amount: string;
  /** the merchant's idempotency key: the same id never charges twice, and answers the original outcome */
  chargeId: string;
  /** units delivered for it (a receipt's `units`) */
  units?: string;
}

export type MppSessionCharge =
  /** spent is recorded: deliver. `receipt` is the session receipt as it stands (acceptedCumulative, spent, …). */
  | { ok: true; receipt: Record<string, unknown> & { channelId: string; acceptedCumulative: string; spent: string } }
  /** the accepted vouchers do not cover it: ask the payer for a voucher of at least `requiredCumulative` (SSE `payment-need-voucher`) */
  | { ok: false; needVoucher: { channelId: string; requiredCumulative: string; acceptedCumulative: string; deposit: string } }
  /** the channel cannot be charged (unknown, closing, closed): stop metering */
  | { ok: false; status: number; problem: MppProblem };

export interface MppSessionChannel {
  channelId: string;
  deposit: string;
  acceptedCumulative: string;
  spent: string;
  settled: string;
  state: string;
  [member: string]: unknown;
}

export interface MppFacilitatorClientOptions {
  /** the facilitator's base URL */
  url: string;
  /** the merchant's API key (unset in open mode) */
  apiKey?: string;
  fetch?: typeof fetch;
}

/** Thrown for answers that are not payment outcomes: a bad API key, invalid terms, the facilitator unavailable. */
export class MppFacilitatorError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(
      `the facilitator answered ${status}: ${typeof body === 'object' && body && 'detail' in body ? String((body as { detail: unknown }).detail) : JSON.stringify(body)}`,
    );
    this.name = 'MppFacilitatorError';
  }
}

const PAYMENT_PROBLEMS = 'https://paymentauth.org/problems/';

export class MppFacilitatorClient {
  private readonly fetch: typeof fetch;

  constructor(private readonly options: MppFacilitatorClientOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async challenges(terms: MppTerms): Promise<MppIssued> {
    const { status, body } = await this.post('/mpp/challenges', terms);
    if (status !== 201) throw new MppFacilitatorError(status, body);
    return body as MppIssued;
  }

  /** The issuer key and canonical offers for issuing the route's challenges in the merchant's own process. */
  async issuance(terms: MppTerms): Promise<MppIssuance> {
    const { status, body } = await this.post('/mpp/issuance', terms);
    if (status !== 200) throw new MppFacilitatorError(status, body);
    return body as MppIssuance;
  }

  /** `credential`: the Authorization (or Payment-Authorization) header value as received. */
  async verify(credential: string, terms: MppTerms, credentialHeader: 'Authorization' | 'Payment-Authorization' = 'Authorization'): Promise<MppVerification> {
    const answer = await this.post('/mpp/verify', { credential, credentialHeader, terms });
    const failure = paymentFailure(answer);
    if (failure) return failure;
    const body = answer.body as { challengeId: string; method: string; payer?: string };
    return { ok: true, challengeId: body.challengeId, method: body.method, ...(body.payer && { payer: body.payer }) };
  }

  async settle(credential: string, terms: MppTerms, credentialHeader: 'Authorization' | 'Payment-Authorization' = 'Authorization'): Promise<MppSettlement> {
    const answer = await this.post('/mpp/settle', { credential, credentialHeader, terms });
    const failure = paymentFailure(answer);
    if (failure) return failure;
    const body = answer.body as { receipt: MppSettlement & { reference: string }; paymentReceipt: string; payer?: string };
    return { ok: true, receipt: body.receipt as never, paymentReceipt: body.paymentReceipt, ...(body.payer && { payer: body.payer }) };
  }

  /** Records `amount` more spent on a session channel, before the merchant delivers what it pays for. */
  async sessionCharge(charge: MppSessionChargeInput): Promise<MppSessionCharge> {
    const { status, body } = await this.post('/mpp/sessions/charges', charge);
    if (status === 200 || status === 201) return { ok: true, receipt: (body as { receipt: never }).receipt };
    const problem = body as MppProblem | undefined;
    if (status === 402 && typeof problem?.requiredCumulative === 'string') {
      const { channelId, requiredCumulative, acceptedCumulative, deposit } = problem as Record<string, string>;
      return {
        ok: false,
        needVoucher: { channelId: channelId!, requiredCumulative: requiredCumulative!, acceptedCumulative: acceptedCumulative!, deposit: deposit! },
      };
    }
    if (typeof problem?.type === 'string' && problem.type.startsWith(PAYMENT_PROBLEMS)) return { ok: false, status, problem };
    throw new MppFacilitatorError(status, body);
  }

  /** A session channel as the facilitator books it (amounts as decimal strings). */
  async sessionChannel(channelId: string): Promise<MppSessionChannel> {
    const { status, body } = await this.send('GET', `/mpp/sessions/${encodeURIComponent(channelId)}`);
    if (status !== 200) throw new MppFacilitatorError(status, body);
    return body as MppSessionChannel;
  }

  private post(path: string, body: unknown): Promise<{ status: number; body: unknown }> {
    return this.send('POST', path, body);
  }

  private async send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const response = await this.fetch(new URL(path, this.options.url), {
      method,
      headers: {
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: reported as it is
    }
    return { status: response.status, body: parsed };
  }
}

function paymentFailure(answer: { status: number; body: unknown }): Extract<MppSettlement, { ok: false }> | undefined {
  if (answer.status === 200) return undefined;
  const problem = answer.body as MppProblem | undefined;
  if (typeof problem?.type === 'string' && problem.type.startsWith(PAYMENT_PROBLEMS)) {
    // One WWW-Authenticate value per fresh challenge (fetch would join the header's repeated fields into one).
    const wwwAuthenticate = (problem.challenges ?? []).map((c) => serializeChallenge(c as Challenge));
    return { ok: false, status: answer.status, problem, wwwAuthenticate };
  }
  throw new MppFacilitatorError(answer.status, answer.body);
}
