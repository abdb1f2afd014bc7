import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { MppFacilitatorClient, MppFacilitatorError, type MppProblem, type MppTerms } from '@mp/clients';
import { bodyDigest, PAYMENT_RECEIPT_HEADER, toProblemDetails } from '@mp/mpp';
import { problemBody, registerLogSecrets } from '@mp/platform';
import { fetchWithTimeout } from '../facilitator-fetch';
import type { MerchantConfig } from '../merchant.config';
import { LocalChallenges } from './local-challenges';
import { MPP_TOP_UP_ROUTE, mppTerms, mppTopUpTerms } from './mpp-terms';

export const MPP_FORECAST_ROUTE = '/mpp/forecast';
export const MPP_FORECAST_RESOURCE = `POST ${MPP_FORECAST_ROUTE}`;

/** What the paywall leaves in `res.locals` for the route's handler: the settled payment. */
export interface MppPaid {
  /** the receipt's reference: the transaction (evm) or the PaymentIntent (stripe) */
  reference: string;
  method: string;
  /** the payer the facilitator recovered (evm: the authorization's `from`), lowercase */
  payer?: string;
}
export const MPP_PAID_LOCAL = 'mppPaid';

/** A paid route: its terms for this request, and what must hold of the body before anything is charged. */
interface MppRoute {
  terms(digest: { digest?: string }): MppTerms;
  bodyProblem?(body: unknown): string | undefined;
}

/**
 * MPP in front of POST /mpp/forecast (and, with prepaid balances, POST /mpp/balance/top-up). Without a credential,
 * a 402 with one WWW-Authenticate challenge per method, issued here with the merchant's issuer key from our
 * facilitator (LocalChallenges) and bound to this route and to the request body's digest. With one, the facilitator
 * settles it before the handler runs, and the answer carries the Payment-Receipt. Failures are relayed as the
 * facilitator words them (status, problem+json, fresh challenges).
 */
export function createMppPaywall(config: MerchantConfig): RequestHandler {
  const facilitator = mppFacilitator(config);
  const challenges = new LocalChallenges(facilitator);
  const prepaid = config.prepaid;
  const routes = new Map<string, MppRoute>([
    [MPP_FORECAST_ROUTE, { terms: (digest) => mppTerms(config, MPP_FORECAST_RESOURCE, digest) }],
    ...(prepaid
      ? [[MPP_TOP_UP_ROUTE, { terms: (digest) => mppTopUpTerms({ ...config, prepaid }, digest), bodyProblem: topUpBodyProblem }] satisfies [string, MppRoute]]
      : []),
  ]);

  return async (req: Request, res: Response, next: NextFunction) => {
    const route = req.method === 'POST' ? routes.get(req.path) : undefined;
    if (!route) return next();
    // bad input is refused before a challenge is issued or a credential settled: nothing is charged for it
    const problem = route.bodyProblem?.(req.body);
    if (problem) return relay(res, 400, problemBody('validation_failed', problem, req.originalUrl), []);
    const raw = (req as Request & { rawBody?: Buffer }).rawBody;
    const terms = route.terms(raw && raw.length ? { digest: bodyDigest(raw) } : {});
    try {
      const credentials = paymentCredentials(req);
      if (credentials.length === 0) {
        const issued = await challenges.wwwAuthenticate(terms);
        return relay(res, 402, toProblemDetails('payment-required', { detail: 'this resource is paid; answer one of the challenges' }), issued);
      }
      if (credentials.length > 1) {
        const issued = await challenges.wwwAuthenticate(terms);
        return relay(res, 400, toProblemDetails('bad-request', { detail: 'send exactly one Payment credential' }), issued);
      }
      const [credential] = credentials;
      const settled = await facilitator.settle(credential!.value, terms, credential!.header);
      if (!settled.ok) return relay(res, settled.status, withoutChallenges(settled.problem), settled.wwwAuthenticate);
      res.setHeader(PAYMENT_RECEIPT_HEADER, settled.paymentReceipt);
      res.setHeader('Cache-Control', 'private');
      const paid: MppPaid = {
        reference: settled.receipt.reference,
        method: settled.receipt.method,
        ...(settled.payer && { payer: settled.payer.toLowerCase() }),
      };
      res.locals[MPP_PAID_LOCAL] = paid;
      next();
    } catch (error) {
      const detail = error instanceof MppFacilitatorError ? error.message : `the payment facilitator is unreachable: ${(error as Error).message}`;
      relay(res, 503, problemBody('upstream_unavailable', detail, req.originalUrl), []);
    }
  };
}

/**
 * A top-up's body is empty: the payer who paid is credited (reconciliation checks that a top-up's funding payment was
 * sent by the payer it credits).
 */
function topUpBodyProblem(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) return 'the body must be empty or {}';
  const unknown = Object.keys(body);
  return unknown.length ? `unknown field(s): ${unknown.join(', ')}; the body must be empty or {} (the payer who pays is credited)` : undefined;
}

/** The facilitator's MPP API as this merchant (its API key, when set, kept out of the logs). */
export function mppFacilitator(config: MerchantConfig): MppFacilitatorClient {
  registerLogSecrets([config.facilitatorApiKey]);
  return new MppFacilitatorClient({
    url: config.facilitatorUrl,
    fetch: fetchWithTimeout(config.facilitatorTimeoutMs),
    ...(config.facilitatorApiKey && { apiKey: config.facilitatorApiKey }),
  });
}

/** Every Payment credential in the request: Authorization and Payment-Authorization, repeated fields included. */
export function paymentCredentials(req: Request): { header: 'Authorization' | 'Payment-Authorization'; value: string }[] {
  const found: { header: 'Authorization' | 'Payment-Authorization'; value: string }[] = [];
  // rawHeaders: Node keeps only the first of several Authorization fields in req.headers.
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (name === 'payment-authorization') found.push({ header: 'Payment-Authorization', value });
    else if (name === 'authorization' && /^payment\s/i.test(value.trim())) found.push({ header: 'Authorization', value });
  }
  return found;
}

export function relay(res: Response, status: number, problem: object, wwwAuthenticate: string[]): void {
  res.status(status).setHeader('Cache-Control', 'no-store');
  if (wwwAuthenticate.length) res.setHeader('WWW-Authenticate', wwwAuthenticate);
  res.setHeader('Content-Type', 'application/problem+json');
  res.end(JSON.stringify(problem));
}

/** The challenges travel in WWW-Authenticate; the body keeps the problem itself. */
export function withoutChallenges({ challenges: _challenges, ...problem }: MppProblem): object {
  return problem;
}
