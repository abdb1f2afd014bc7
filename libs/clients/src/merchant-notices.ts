/**
 * Notices other services ask the facilitator to deliver to a merchant as signed webhooks (the facilitator owns the
 * merchants' webhook URLs and secrets). Each is a BullMQ job on this queue, under the deployment's QUEUE_PREFIX,
 * with job id `notice-<noticeId>`; the facilitator delivers each notice id at most once per merchant, however often
 * it is published.
 */
export const MERCHANT_NOTICES_QUEUE = 'merchant-notices';

export const MERCHANT_NOTICE_TYPES = ['reconciliation.breaks_found'] as const;
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
