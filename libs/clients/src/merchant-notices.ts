import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * Notices other services ask the facilitator to deliver to a merchant as signed webhooks (the facilitator owns the
 * merchants' webhook URLs and secrets). A notice is a BullMQ job on this queue, under the deployment's QUEUE_PREFIX,
 * with job id `merchantNoticeJobId(noticeId)` (`notice-<noticeId>`); or up to MAX_NOTICES_PER_JOB of them travel in
 * one `notice-batch` job (MerchantNoticeBatch, job id `merchantNoticeBatchJobId(notices)`). The facilitator delivers
 * each notice id at most once per merchant, however often and in whatever job it is published.
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A MerchantNoticeMessage as its consumer takes it: createdAt is stored as UTC with milliseconds, like the createdAt of payment events. */
export const merchantNoticeSchema = z.object({
  noticeId: z.string().min(1).max(200),
  merchantId: z.string().regex(UUID, 'must be a UUID'),
  type: z.enum(MERCHANT_NOTICE_TYPES),
  createdAt: z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString()),
  data: z.record(z.string(), z.unknown()),
});

/** The name of a job carrying a MerchantNoticeBatch (a single notice's job is named by its `type`). */
export const NOTICE_BATCH_JOB_NAME = 'notice-batch';
/** Most notices one job carries. */
export const MAX_NOTICES_PER_JOB = 100;

/** Notices that travel in one job (a renewal scan's transitions); each is delivered as if it had come alone. */
export const merchantNoticeBatchSchema = z.object({ notices: z.array(merchantNoticeSchema).min(1).max(MAX_NOTICES_PER_JOB) });
export interface MerchantNoticeBatch {
  notices: MerchantNoticeMessage[];
}

/** What a `merchant-notices` job carries: one notice, or a batch. */
export type MerchantNoticeJobData = MerchantNoticeMessage | MerchantNoticeBatch;

/** True when a job's data is a batch (it has `notices`), well formed or not. */
export function isMerchantNoticeBatch(data: unknown): boolean {
  return typeof data === 'object' && data !== null && 'notices' in data;
}

/** A job's data as its notices (one, or a batch's), or the issues that break the contract. */
export function parseMerchantNoticeJob(data: unknown): z.ZodSafeParseResult<MerchantNoticeMessage[]> {
  return isMerchantNoticeBatch(data)
    ? merchantNoticeBatchSchema.transform((b) => b.notices).safeParse(data)
    : merchantNoticeSchema.transform((n) => [n]).safeParse(data);
}

/** One job per notice id: a re-publish of the same notice is dropped by BullMQ while it keeps the job. */
export function merchantNoticeJobId(noticeId: string): string {
  return `notice-${noticeId}`;
}

/** A batch's job id, from its notice ids: the same batch published again is dropped while BullMQ keeps the job. */
export function merchantNoticeBatchJobId(notices: readonly Pick<MerchantNoticeMessage, 'noticeId'>[]): string {
  const digest = createHash('sha256')
    .update(notices.map((n) => n.noticeId).join('\n'))
    .digest('hex');
  return `notices-${digest.slice(0, 40)}`;
}
