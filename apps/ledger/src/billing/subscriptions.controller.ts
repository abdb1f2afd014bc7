import { Body, Controller, Get, Header, HttpCode, Inject, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isEntitled, type Clock } from '@mp/billing';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { decodeKey, encodeCursor } from '../http/cursor';
import { BILLING_CLOCK } from './billing.clock';
import { assertPayerProof, cancelMessage, statusMessage } from './payer-proof';
import { chargeView, factsOf, subscriptionView, type CancelBy, type SubscriptionRecord } from './subscription';
import { normalizePayer, SubscriptionLifecycle } from './subscription-lifecycle.service';
import { openUsageWindow } from './subscription-engine';
import { SubscriptionsRepository } from './subscriptions.repository';
import { UsageChargesRepository } from './usage-charges.repository';
import { currentUsageView, usageChargeView } from './usage-charges.view';
import { CancelSubscriptionDto, SubscriptionIdPath, SubscriptionListQuery, SubscriptionStatusQuery } from './subscriptions.dto';
import { SUBSCRIPTIONS_DOCS } from './subscriptions.openapi';

const notFound = (id: string) => new ProblemError('not_found', `no subscription ${id}`);

/**
 * Subscriptions for the merchant (API key: list, read, cancel) and for the subscriber (a signature by the payer's key:
 * cancel, status). Scoped by merchant: another merchant's subscription is a 404.
 */
@Controller('subscriptions')
export class SubscriptionsController {
  constructor(
    private readonly subscriptions: SubscriptionsRepository,
    private readonly lifecycle: SubscriptionLifecycle,
    private readonly auth: MerchantAuthGuard,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
    private readonly usageCharges: UsageChargesRepository,
  ) {}

  @ApiDoc(SUBSCRIPTIONS_DOCS.list)
  @Get()
  @UseGuards(MerchantAuthGuard)
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: Merchant, @Query() query: SubscriptionListQuery) {
    const { limit = 100, cursor, payer, state, plan } = query;
    const page = await this.subscriptions.list(
      merchant.merchantId,
      { payer: payer === undefined ? undefined : normalizePayer(payer), state, planId: plan },
      limit,
      cursor === undefined ? undefined : decodeKey(cursor),
    );
    return { data: page.subscriptions.map(subscriptionView), nextCursor: page.next ? encodeCursor([page.next]) : null };
  }

  @ApiDoc(SUBSCRIPTIONS_DOCS.get)
  @Get(':id')
  @UseGuards(MerchantAuthGuard)
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() { id }: SubscriptionIdPath) {
    const subscription = await this.subscriptions.find(merchant.merchantId, id);
    if (!subscription) throw notFound(id);
    const open = openUsageWindow(subscription);
    const [{ charges, transitions }, usageCharges, soFar] = await Promise.all([
      this.subscriptions.detail(merchant.merchantId, id),
      this.usageCharges.ofSubscription(merchant.merchantId, id),
      open ? this.usageCharges.soFar(open) : undefined,
    ]);
    return {
      ...subscriptionView(subscription),
      charges: charges.map(chargeView),
      transitions: transitions.map((t) => ({ version: t.version, event: t.event, from: t.fromState, to: t.toState, at: t.at.toISOString(), cause: t.cause })),
      currentUsage: open && soFar ? currentUsageView(open, soFar) : null,
      usageCharges: usageCharges.map(usageChargeView),
    };
  }

  @ApiDoc(SUBSCRIPTIONS_DOCS.cancel, { body: CancelSubscriptionDto })
  @Post(':id/cancel')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  async cancel(
    @Param() { id }: SubscriptionIdPath,
    @Body() body: CancelSubscriptionDto,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ) {
    const at = body.at ?? 'period_end';
    let subscription: SubscriptionRecord | undefined;
    let by: CancelBy;
    if (body.signature !== undefined || body.deadline !== undefined) {
      if (body.signature === undefined || body.deadline === undefined) {
        const missing = body.signature === undefined ? 'signature' : 'deadline';
        throw new ProblemError('validation_failed', `invalid field(s): ${missing}`, {
          invalidParams: [{ name: missing, reason: 'is required with the payer proof' }],
        });
      }
      subscription = await this.subscriptions.findById(id);
      if (!subscription) throw notFound(id);
      await assertPayerProof(subscription.payer, cancelMessage(at, id, body.deadline), body.signature, body.deadline, this.clock.now());
      by = 'payer';
    } else {
      const merchantId = await this.auth.merchantOf(request, response);
      subscription = await this.subscriptions.find(merchantId, id);
      if (!subscription) throw notFound(id);
      by = 'merchant';
    }
    const { outcome, record } = await this.lifecycle.cancel(subscription, at, by, body.reason ?? null);
    if (outcome.kind === 'ended')
      throw new ProblemError('subscription_ended', `subscription ${id} ended (${outcome.state}) without a cancel: nothing to cancel`, { state: outcome.state });
    return subscriptionView(record);
  }

  @ApiDoc(SUBSCRIPTIONS_DOCS.status)
  @Get(':id/status')
  @Header('cache-control', 'no-store')
  async status(@Param() { id }: SubscriptionIdPath, @Query() { signature, deadline }: SubscriptionStatusQuery) {
    const subscription = await this.subscriptions.findById(id);
    if (!subscription) throw notFound(id);
    const now = this.clock.now();
    await assertPayerProof(subscription.payer, statusMessage(id, deadline), signature, deadline, now);
    return { ...subscriptionView(subscription), entitled: isEntitled(factsOf(subscription), now) };
  }
}
