import {
  isMerchantNoticeBatch,
  MAX_NOTICES_PER_JOB,
  merchantNoticeBatchJobId,
  merchantNoticeJobId,
  parseMerchantNoticeJob,
  type MerchantNoticeMessage,
} from './merchant-notices';

describe('the merchant-notices contract', () => {
  const notice = (n: number): MerchantNoticeMessage => ({
    noticeId: `subscription-c3ViX2V4YW1wbGVfMDAx-${n}`,
    merchantId: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
    type: 'subscription.renewed',
    createdAt: '2026-02-28T10:00:00Z',
    data: { version: n },
  });

  it('takes one notice, or a batch of up to 100 told apart by `notices`, as the list of its notices (createdAt in UTC with milliseconds)', () => {
    const one = parseMerchantNoticeJob(notice(1));
    expect(one.success && one.data).toEqual([{ ...notice(1), createdAt: '2026-02-28T10:00:00.000Z' }]);
    expect(isMerchantNoticeBatch(notice(1))).toBe(false);
    const notices = Array.from({ length: MAX_NOTICES_PER_JOB }, (_, n) => notice(n));
    const batch = parseMerchantNoticeJob({ notices });
    expect(isMerchantNoticeBatch({ notices })).toBe(true);
    expect(batch.success && batch.data.map((n) => n.noticeId)).toEqual(notices.map((n) => n.noticeId));
  });

  it('refuses an empty batch, more than 100, or a batch with one malformed notice, naming it', () => {
    for (const data of [{ notices: [] }, { notices: Array.from({ length: MAX_NOTICES_PER_JOB + 1 }, (_, n) => notice(n)) }, { notices: notice(1) }])
      expect(parseMerchantNoticeJob(data).success).toBe(false);
    const parsed = parseMerchantNoticeJob({ notices: [notice(1), { ...notice(2), merchantId: 'nope' }] });
    expect(parsed.success ? [] : parsed.error.issues.map((i) => i.path.join('.'))).toEqual(['notices.1.merchantId']);
    expect(parseMerchantNoticeJob({ ...notice(1), type: 'payment.confirmed' }).success).toBe(false);
  });

  it('keys a notice by its id and a batch by its notice ids', () => {
    expect(merchantNoticeJobId('reconciliation-7')).toBe('notice-reconciliation-7');
    const a = [notice(1), notice(2)];
    expect(merchantNoticeBatchJobId(a)).toBe(merchantNoticeBatchJobId(structuredClone(a)));
    expect(merchantNoticeBatchJobId(a)).toMatch(/^notices-[0-9a-f]{40}$/);
    expect(merchantNoticeBatchJobId(a)).not.toBe(merchantNoticeBatchJobId([notice(1)]));
  });
});
