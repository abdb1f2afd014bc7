import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { BalancePath, BalanceQuery, CaptureDto, ChargeDto, HoldDto, HoldPath, TopUpDto } from './balances.dto';
import { BALANCES_DOCS } from './balances.openapi';
import { PrepaidBalances, type Outcome, type PrepaidBalance } from './prepaid-balances.service';

const DEFAULT_HOLD_SECONDS = 300;

/** Prepaid balances: top-ups from settled payments, and metered calls drawing on them (charge, or hold then capture). */
@Controller('balances')
@UseGuards(MerchantAuthGuard)
export class BalancesController {
  constructor(private readonly balances: PrepaidBalances) {}

  @ApiDoc(BALANCES_DOCS.get)
  @Get(':payer')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() path: BalancePath, @Query() query: BalanceQuery) {
    return balanceView(await this.balances.balance(merchant.merchantId, path.payer, query.asset));
  }

  @ApiDoc(BALANCES_DOCS.topUp, { body: TopUpDto })
  @Post('top-ups')
  @Header('cache-control', 'no-store')
  async topUp(@CurrentMerchant() merchant: Merchant, @Body() body: TopUpDto, @Res({ passthrough: true }) response: Response) {
    const outcome = await this.balances.topUp(merchant.merchantId, { ...body, amount: BigInt(body.amount) });
    return answered(outcome, response);
  }

  @ApiDoc(BALANCES_DOCS.charge, { body: ChargeDto })
  @Post('charges')
  @Header('cache-control', 'no-store')
  async charge(@CurrentMerchant() merchant: Merchant, @Body() body: ChargeDto, @Res({ passthrough: true }) response: Response) {
    return answered(await this.balances.charge(merchant.merchantId, { ...body, amount: BigInt(body.amount) }), response);
  }

  @ApiDoc(BALANCES_DOCS.hold, { body: HoldDto })
  @Post('holds')
  @Header('cache-control', 'no-store')
  async hold(@CurrentMerchant() merchant: Merchant, @Body() body: HoldDto, @Res({ passthrough: true }) response: Response) {
    const hold = { ...body, amount: BigInt(body.amount), timeoutSeconds: body.timeoutSeconds ?? DEFAULT_HOLD_SECONDS };
    return answered(await this.balances.hold(merchant.merchantId, hold), response);
  }

  @ApiDoc(BALANCES_DOCS.capture, { body: CaptureDto })
  @Post('holds/:id/capture')
  @HttpCode(201)
  async capture(@CurrentMerchant() merchant: Merchant, @Param() path: HoldPath, @Body() body: CaptureDto, @Res({ passthrough: true }) response: Response) {
    const { created } = await this.balances.capture(merchant.merchantId, path.id, BigInt(body.amount));
    if (!created) response.status(200);
    return { id: path.id, status: body.amount === '0' ? 'released' : 'captured' };
  }

  @ApiDoc(BALANCES_DOCS.release)
  @Post('holds/:id/release')
  @HttpCode(201)
  async release(@CurrentMerchant() merchant: Merchant, @Param() path: HoldPath, @Res({ passthrough: true }) response: Response) {
    const { created } = await this.balances.release(merchant.merchantId, path.id);
    if (!created) response.status(200);
    return { id: path.id, status: 'released' };
  }
}

function answered(outcome: Outcome, response: Response) {
  if (!outcome.created) response.status(200);
  return balanceView(outcome.balance);
}

function balanceView(b: PrepaidBalance) {
  return {
    payer: b.payer,
    asset: b.asset,
    available: b.available.toString(),
    held: b.held.toString(),
    deposited: b.deposited.toString(),
    spent: b.spent.toString(),
  };
}
