import {
  MAX_EVENTS_PER_BATCH,
  PAYMENT_EVENT_BATCH_JOB,
  PAYMENT_EVENT_TYPES,
  parsePaymentEventBatch,
  parsePaymentEventMessage,
  paymentEventBatchJobId,
  paymentEventBatchSchema,
  paymentEventJobId,
  paymentEventMessageSchema,
  paymentEventsOfJob,
  type PaymentEventMessage,
  type PaymentSnapshot,
} from './payment-events';

describe('the payment-events contract', () => {
  const paymentId = '3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f4a7b31';
  const merchantId = '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d';
  const txHash = `0x${'ab'.repeat(32)}`;
  const blockHash = `0x${'cd'.repeat(32)}`;
  const refundId = '7d1f7a0e-9a43-4f7e-b1d5-2a4b6c8d0e1f';
  const subscriptionId = 'c3ViX2V4YW1wbGVfMDAx';
  const payment: PaymentSnapshot = {
    id: paymentId,
    state: 'confirmed',
    protocol: 'x402',
    rail: 'evm',
    network: 'eip155:8453',
    asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
    payer: '0x1111111111111111111111111111111111111111',
    payTo: '0x2222222222222222222222222222222222222222',
    amount: '10000',
    nonce: `0x${'01'.repeat(32)}`,
    scheme: 'exact',
    challengeId: null,
    reference: null,
    txHash,
    merchantId,
  };
  const message = (type: string, data: unknown, overrides: Record<string, unknown> = {}) => ({
    eventId: '42',
    type,
    paymentId,
    merchantId,
    occurredAt: '2026-12-01T15:00:00.000Z',
    data,
    payment,
    ...overrides,
  });

  // every shape the facilitator writes (apps/facilitator/src/settlement/chain-payments.repository.ts, stripe/stripe-payments.repository.ts)
  const written: [string, unknown][] = [
    [
      'payment.verified',
      {
        network: 'eip155:8453',
        asset: payment.asset,
        payer: payment.payer,
        payTo: payment.payTo,
        amount: '10000',
        nonce: payment.nonce,
        protocol: 'x402',
        rail: 'evm',
      },
    ],
    [
      'payment.verified',
      {
        network: 'stripe',
        asset: 'usd',
        payer: 'spt_1',
        payTo: 'profile_1',
        amount: '500',
        nonce: 'ch_1',
        protocol: 'mpp',
        rail: 'stripe',
        method: 'stripe',
        challengeId: 'ch_1',
      },
    ],
    ['payment.submitted', { txHash, signer: payment.payTo, txNonce: 7 }],
    ['payment.replaced', { txHash, replaces: blockHash, maxFeePerGas: '3000000000', maxPriorityFeePerGas: '1000000000' }],
    ['payment.resend', { reason: 'nonce already used' }],
    ['payment.retried', { payloadHash: 'a1b2c3' }],
    ['payment.confirmed', { txHash, blockNumber: '123', blockHash, gasUsed: '52000', effectiveGasPrice: '1000000000', gasFee: '52000000000000' }],
    ['payment.confirmed', { reference: 'pi_1', amountReceived: '500', currency: 'usd', via: 'sweep', corrects: 'payment.failed' }],
    ['payment.failed', { txHash, reason: 'transaction_failed', message: 'reverted', gasFee: '1' }],
    ['payment.failed', { reason: 'unexpected_settle_error', message: 'node refused it', broadcast: false }],
    ['payment.failed', { reason: 'card_declined', message: 'declined', reference: 'pi_1' }],
    ['payment.expired', { message: 'validBefore passed' }],
    ['payment.reorged', { blockHash, blockNumber: '123' }],
    ['payment.refund_pending', { refundId, amount: '400', reason: 'requested_by_customer', idempotencyKey: 'rf-1', refundTo: null }],
    ['payment.refunded', { refundId, amount: '400', reason: 'requested_by_customer', idempotencyKey: 'rf-1', refundTo: payment.payer, reference: txHash }],
    [
      'payment.refund_failed',
      {
        refundId,
        amount: '400',
        reason: 'duplicate',
        idempotencyKey: 'rf-1',
        refundTo: null,
        reference: 're_1',
        failureReason: 'charge_for_pending_refund_disputed',
        message: 'disputed',
      },
    ],
    [
      'subscription.activated',
      {
        subscriptionId,
        method: 'evm',
        planId: merchantId,
        payer: payment.payer,
        payTo: payment.payTo,
        network: 'eip155:8453',
        asset: payment.asset,
        amount: '10000',
        periodUnit: 'month',
        periodCount: 1,
        anchor: '2026-01-31T10:00:00.000Z',
        expiresAt: '2027-01-31T10:00:00.000Z',
        authorizedPeriods: 12,
        challengeId: 'ch_1',
      },
    ],
    [
      'subscription.charge_refused',
      { subscriptionId, periodIndex: 3, attempt: 0, commandId: 'charge-x-3-0', reason: 'revoked', message: 'the payer canceled it' },
    ],
    [
      'subscription.revoked',
      { subscriptionId, reason: 'authorization_canceled', message: 'canceled on chain', at: '2026-03-01T00:00:00Z', nonce: blockHash, txHash },
    ],
    ['subscription.canceled', { subscriptionId, commandId: 'cancel-1', at: 'period_end', effectiveAt: '2026-04-30T10:00:00.000Z' }],
  ];

  it('takes a subscription charge: the snapshot names its period and attempt', () => {
    const charge = { ...payment, subscription: { id: subscriptionId, periodIndex: 2, attempt: 1 } };
    expect(parsePaymentEventMessage(message('payment.confirmed', { reference: 'in_1' }, { payment: charge }))).toMatchObject({ ok: true });
    const bad = { ...payment, subscription: { id: subscriptionId, periodIndex: -1, attempt: 0 } };
    expect(parsePaymentEventMessage(message('payment.confirmed', { reference: 'in_1' }, { payment: bad }))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/periodIndex/),
    });
  });

  it.each(written)('takes %s as the facilitator writes it', (type, data) => {
    const parsed = parsePaymentEventMessage(message(type, data));
    expect(parsed).toEqual({ ok: true, message: message(type, data) });
  });

  it('has one member per event type, each one written above', () => {
    expect(new Set(written.map(([type]) => type))).toEqual(new Set(PAYMENT_EVENT_TYPES));
    expect(paymentEventMessageSchema.options).toHaveLength(PAYMENT_EVENT_TYPES.length);
  });

  it('narrows data by type', () => {
    const parsed = paymentEventMessageSchema.parse(message('payment.reorged', { blockHash, blockNumber: '9' })) as PaymentEventMessage;
    if (parsed.type !== 'payment.reorged') throw new Error('not narrowed');
    expect(BigInt(parsed.data.blockNumber)).toBe(9n);
  });

  const broken: [string, unknown, RegExp][] = [
    ['an unknown type', message('payment.settled', {}), /type/],
    ['an amount that is not a decimal string', message('payment.verified', { ...(written[0][1] as object), amount: '1e4' }), /amount/],
    [
      'a number where a decimal string belongs',
      message('payment.confirmed', { txHash, blockNumber: 123, blockHash, gasUsed: '1', gasFee: '1' }),
      /blockNumber/,
    ],
    ['a hash that is not 32 bytes of hex', message('payment.reorged', { blockHash: '0x1234', blockNumber: '1' }), /blockHash/],
    ['a key the contract does not know', message('payment.expired', { message: 'x', extra: true }), /extra/],
    ['confirmed data of neither rail', message('payment.confirmed', { txHash }), /data/],
    // of a union, the problems of the member whose keys it has
    [
      'an on-chain confirmation with a bad hash',
      message('payment.confirmed', { txHash: '0x1234', blockNumber: '1', blockHash, gasUsed: '1', gasFee: '1' }),
      /^data\.txHash: expected a 32-byte 0x hex hash$/,
    ],
    ['a failure with an unsent flag that is not false', message('payment.failed', { reason: 'x', message: 'y', broadcast: true }), /broadcast/],
    ['a snapshot with a negative amount', message('payment.expired', { message: 'x' }, { payment: { ...payment, amount: '-1' } }), /payment\.amount/],
    ['an event id that is not an outbox id', message('payment.expired', { message: 'x' }, { eventId: 'event-42' }), /eventId/],
    ['no payment', message('payment.expired', { message: 'x' }, { payment: undefined }), /payment/],
  ];

  it.each(broken)('refuses %s, saying where', (_what, value, where) => {
    const parsed = parsePaymentEventMessage(value);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.reason).toMatch(where);
    expect(parsed.reason).not.toContain('\n');
  });

  it('refuses what is not an object at all', () => {
    expect(parsePaymentEventMessage(null)).toMatchObject({ ok: false });
    expect(parsePaymentEventMessage('payment.confirmed')).toMatchObject({ ok: false });
  });

  describe('a batch job', () => {
    const events = [
      message('payment.verified', written[0][1], { eventId: '41' }),
      message('payment.submitted', { txHash, signer: payment.payTo, txNonce: 7 }, { eventId: '42' }),
      message('payment.expired', { message: 'validBefore passed' }, { eventId: '57', paymentId: refundId }),
    ];

    it('takes every event as a single job would carry it, in order', () => {
      expect(parsePaymentEventBatch({ events })).toEqual({ ok: true, events: events.map((m) => ({ ok: true, message: m })) });
      expect(paymentEventBatchSchema.parse({ events })).toEqual({ events });
    });

    it('parses each event on its own: one that breaks the contract is refused with its reason, the others kept', () => {
      const bad = message('payment.reorged', { blockHash: '0x1234', blockNumber: '1' }, { eventId: '50' });
      const parsed = parsePaymentEventBatch({ events: [events[0], bad, events[1]] });
      expect(parsed).toEqual({
        ok: true,
        events: [
          { ok: true, message: events[0] },
          { ok: false, reason: expect.stringMatching(/^data\.blockHash: /), value: bad },
          { ok: true, message: events[1] },
        ],
      });
    });

    it.each<[string, unknown, RegExp]>([
      ['no events', { events: [] }, /events/],
      ['more events than a consumer takes', { events: Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, () => events[0]) }, /events/],
      ['events that are not a list', { events: events[0] }, /events/],
      ['a key the contract does not know', { events, traceContext: {} }, /traceContext/],
      ['a single event', events[0], /eventId|events/],
      ['nothing', null, /the message/],
    ])('refuses whole a batch with %s', (_what, value, where) => {
      const parsed = parsePaymentEventBatch(value);
      expect(parsed).toMatchObject({ ok: false, reason: expect.stringMatching(where) });
    });

    it('has an id made of its event ids that tells batches apart by every event and payment', () => {
      const id = paymentEventBatchJobId(events);
      expect(id).toMatch(/^payment-events-batch-41-57-3-[0-9a-f]{16}$/);
      expect(paymentEventBatchJobId(events.map((e) => ({ ...e })))).toBe(id);
      // a restored database: the same event ids, other payments
      expect(paymentEventBatchJobId(events.map((e) => ({ ...e, paymentId: merchantId })))).not.toBe(id);
      // the same first and last ids and count, another event between them
      expect(paymentEventBatchJobId([events[0], { ...events[1], eventId: '43' }, events[2]])).not.toBe(id);
      // the payment id's case names the same payment
      expect(paymentEventBatchJobId(events.map((e) => ({ ...e, paymentId: e.paymentId.toUpperCase() })))).toBe(id);
      // never a single event's id, and never a number (BullMQ refuses integer custom ids)
      expect(id).not.toBe(paymentEventJobId('41', paymentId));
      expect(() => paymentEventBatchJobId([])).toThrow(/at least one event/);
    });

    it('names the events a job carries, batch or single', () => {
      expect(paymentEventsOfJob({ name: PAYMENT_EVENT_BATCH_JOB, data: { events } })).toEqual(events);
      expect(paymentEventsOfJob({ name: 'payment.verified', data: events[0] })).toEqual([events[0]]);
      expect(paymentEventsOfJob({ name: PAYMENT_EVENT_BATCH_JOB, data: null })).toEqual([]);
    });
  });
});
