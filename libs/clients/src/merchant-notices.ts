/**
 * Notices other services ask the facilitator to deliver to a merchant as signed webhooks (the facilitator owns the
 * merchants' webhook URLs and secrets). Each is a BullMQ job on this queue, under the deployment's QUEUE_PREFIX,
 * with job id `notice-<noticeId>`; the facilitator delivers each notice id at most once per merchant, however often
 * it is published.
 */
export const MERCHANT_NOTICES_QUEUE = 'merchant-notices';

export const MERCHANT_NOTICE_TYPES = [
  'reconciliation.breaks_found',
  /**
   * The ledger's subscription lifecycle (issue 13), one notice per recorded transition (noticeId
   * `subscription-<subscriptionId>-<version>`): the first period paid or a trial started; a period paid; a renewal
   * failed (the subscription is past_due), a retry failed; a cancel at period end recorded; the subscription ended
   * canceled, or kept unpaid after dunning; the payer withdrew the grant on the rail; the first payment never came;
   * the refund of an immediate cancel's unused part was executed, or failed on its rail.
   */
  'subscription.activated',
  'subscription.renewed',
  'subscription.past_due',
  'subscription.payment_failed',
  'subscription.cancel_scheduled',
  'subscription.canceled',
  'subscription.unpaid',
  'subscription.revoked',
  'subscription.incomplete_expired',
  'subscription.refunded',
  'subscription.refund_failed',
] as const;
export type MerchantNoticeType = (typeof MERCHANT_NOTICE_TYPES)[number];

export interface MerchantNoticeMessage {
  /** unique per notice: the same notice published twice is delivered once (the ledger uses the run id) */
  noticeId: string;
  merchantId: string;
  type: MerchantNoticeType;
  /** ISO 8601 */
  createdAt: string;
  /** the webhook body's `data` */
  data: Record<string, unknown>;
}
