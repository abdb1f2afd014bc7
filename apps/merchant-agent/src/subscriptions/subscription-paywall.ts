import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { MppFacilitatorError } from '@mp/clients';
import { PAYMENT_RECEIPT_HEADER, toProblemDetails } from '@mp/mpp';
import { problemBody } from '@mp/platform';
import type { MerchantConfig } from '../merchant.config';
import { mppFacilitator, paymentCredentials, relay, withoutChallenges } from '../mpp/mpp-paywall';
import { LedgerUnavailableError, payerProofHeader, SubscriptionEntitlements } from './entitlements';
import { grantExpiresAt, subscriptionTerms, termsForCredential } from './subscription-terms';

export const MPP_BRIEFING_ROUTE = '/mpp/briefing';
export const MPP_BRIEFING_RESOURCE = `GET ${MPP_BRIEFING_ROUTE}`;
export const PAYER_PROOF_HEADER = 'Payer-Proof';

/** What the handler learns from the paywall: whose subscription it serves. */
export interface ServedSubscription {
  subscriptionId: string | null;
  payer: string | null;
  paidThrough: string | null;
}

/**
 * MPP `subscription` in front of GET /mpp/briefing (recurring-and-streaming.md §1.2, mppx's `authorize` hook):
 * - a Payment credential activates a subscription: the facilitator settles it (period 0) and the answer carries the
 *   Payment-Receipt with its subscriptionId;
 * - a Payer-Proof (the payer's signature, @mp/chain accessMessage) is served while the ledger says the payer is
 *   entitled; a renewal the ledger has not seen paid yet is 409 Retry-After: 1;
 * - anything else (no credential, a proof that proves nothing, not entitled) is 402 with a fresh challenge,
 *   Cache-Control: no-store. A subscriptionId alone authorizes nothing: the payer is proven, then looked up.
 */
export function createSubscriptionPaywall(config: MerchantConfig): RequestHandler {
  const subscription = config.subscription;
  const facilitator = mppFacilitator(config);
  const entitlements = subscription && new SubscriptionEntitlements(subscription, config.facilitatorTimeoutMs);

  return async (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' || req.path !== MPP_BRIEFING_ROUTE) return next();
    if (!subscription || !entitlements) return next(); // not sold here: the route is not mounted either
    const challenge = async (status: number, detail: string) => {
      const issued = await facilitator.challenges(subscriptionTerms(config, subscription, MPP_BRIEFING_RESOURCE, grantExpiresAt(subscription, new Date())));
      relay(res, status, toProblemDetails(status === 400 ? 'bad-request' : 'payment-required', { detail }), issued.wwwAuthenticate);
    };
    try {
      const credentials = paymentCredentials(req);
      if (credentials.length > 1) return await challenge(400, 'send exactly one Payment credential');
      if (credentials.length === 1) {
        const [{ header, value }] = credentials as [(typeof credentials)[number]];
        const terms = termsForCredential(config, subscription, MPP_BRIEFING_RESOURCE, value, new Date());
        const settled = await facilitator.settle(value, terms, header);
        if (!settled.ok) return relay(res, settled.status, withoutChallenges(settled.problem), settled.wwwAuthenticate);
        res.setHeader(PAYMENT_RECEIPT_HEADER, settled.paymentReceipt);
        res.setHeader('Cache-Control', 'private');
        const served: ServedSubscription = {
          subscriptionId: (settled.receipt.subscriptionId as string | undefined) ?? null,
          payer: settled.payer ?? null,
          paidThrough: null,
        };
        res.locals.subscription = served;
        return next();
      }

      const proof = payerProofHeader(req.header(PAYER_PROOF_HEADER));
      if (!proof)
        return await challenge(
          402,
          `${subscription.product} is sold by subscription: subscribe with one of the challenges, or prove a subscribed payer (${PAYER_PROOF_HEADER})`,
        );
      if ('problem' in proof) return await challenge(402, proof.problem);
      const proven = await entitlements.prove(proof, MPP_BRIEFING_RESOURCE);
      if (!proven.ok) return await challenge(402, `${PAYER_PROOF_HEADER}: ${proven.problem}`);
      const entitlement = await entitlements.of(proven.payer);
      if (entitlement.entitled) {
        res.setHeader('Cache-Control', 'private');
        const served: ServedSubscription = { subscriptionId: entitlement.subscriptionId, payer: proven.payer, paidThrough: entitlement.paidThrough };
        res.locals.subscription = served;
        return next();
      }
      // active with the current period unpaid: the renewal is due or in flight, the ledger books it shortly
      if (entitlement.state === 'active' && entitlement.reason === 'not_paid') {
        res.setHeader('Retry-After', '1');
        const detail = `the renewal of subscription ${entitlement.subscriptionId} is not paid yet; retry in 1 s`;
        return relay(res, 409, problemBody('settlement_in_progress', detail, req.originalUrl), []);
      }
      return await challenge(402, `${proven.payer} is not entitled to ${subscription.product} (${entitlement.reason}): subscribe with one of the challenges`);
    } catch (error) {
      const detail =
        error instanceof MppFacilitatorError || error instanceof LedgerUnavailableError
          ? error.message
          : `the payment facilitator is unreachable: ${(error as Error).message}`;
      relay(res, 503, problemBody('upstream_unavailable', detail, req.originalUrl), []);
    }
  };
}
