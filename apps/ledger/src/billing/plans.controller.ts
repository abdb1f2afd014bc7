import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { decodeKey, encodeCursor } from '../http/cursor';
import { LedgerIdPath } from '../http/queries.dto';
import { MeterRepository } from '../usage/meter.repository';
import { differingTerms, planView, usageComponentProblems, type PlanView } from './plan';
import { PlanRepository } from './plan.repository';
import { CreatePlanDto, PlanListQuery, planInputOf } from './plans.dto';
import { PLANS_DOCS } from './plans.openapi';

/** A merchant's subscription plans: create (idempotent by the caller's id), list, read, archive. */
@Controller('plans')
@UseGuards(MerchantAuthGuard)
export class PlansController {
  constructor(
    private readonly plans: PlanRepository,
    private readonly meters: MeterRepository,
  ) {}

  @ApiDoc(PLANS_DOCS.create, { body: CreatePlanDto })
  @Post()
  @Header('cache-control', 'no-store')
  async create(@CurrentMerchant() merchant: Merchant, @Body() body: CreatePlanDto, @Res({ passthrough: true }) response: Response): Promise<PlanView> {
    const input = planInputOf(body);
    if (input.usage.length) {
      const meters = new Set((await this.meters.list(merchant.merchantId)).map((m) => m.key));
      const problems = usageComponentProblems(input, (key) => meters.has(key));
      if (problems.length)
        throw new ProblemError('validation_failed', `invalid field(s): ${[...new Set(problems.map((p) => p.name))].join(', ')}`, { invalidParams: problems });
    }
    const outcome = await this.plans.create(merchant.merchantId, input);
    if (outcome.created) return planView(outcome.plan);
    if (!outcome.plan) {
      const other = outcome.namedAlike;
      throw new ProblemError(
        'plan_conflict',
        `open plan ${other.id} is already named ${JSON.stringify(other.name)} for product ${JSON.stringify(other.product)}: archive it first, or choose another name`,
        {
          planId: other.id,
        },
      );
    }
    const conflictingFields = differingTerms(outcome.plan, input);
    if (conflictingFields.length) {
      throw new ProblemError('plan_conflict', `plan ${input.id} exists with other terms: ${conflictingFields.join(', ')}`, {
        planId: input.id,
        conflictingFields,
      });
    }
    response.status(200);
    return planView(outcome.plan);
  }

  @ApiDoc(PLANS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: Merchant, @Query() query: PlanListQuery) {
    const { limit = 100, cursor, product, archived } = query;
    const page = await this.plans.list(merchant.merchantId, { product, archived }, limit, cursor === undefined ? undefined : decodeKey(cursor));
    return { data: page.plans.map(planView), nextCursor: page.next ? encodeCursor([page.next]) : null };
  }

  @ApiDoc(PLANS_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() { id }: LedgerIdPath): Promise<PlanView> {
    return planView(await this.found(merchant, id));
  }

  @ApiDoc(PLANS_DOCS.archive)
  @Post(':id/archive')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  async archive(@CurrentMerchant() merchant: Merchant, @Param() { id }: LedgerIdPath): Promise<PlanView> {
    const plan = await this.plans.archive(merchant.merchantId, id);
    if (!plan) throw notFound(id);
    return planView(plan);
  }

  private async found(merchant: Merchant, id: string) {
    const plan = await this.plans.find(merchant.merchantId, id);
    if (!plan) throw notFound(id);
    return plan;
  }
}

const notFound = (id: string) => new ProblemError('not_found', `no plan ${id}`);
