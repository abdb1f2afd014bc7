import { Body, Controller, Get, Header, Headers, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { CreateMeterDto, MeterKeyPath, MeterSummaryQuery, meterOf } from './usage.dto';
import { USAGE_DOCS } from './usage.openapi';
import { UsageService, type MeterView, type SummaryView } from './usage.service';
import type { IngestCounts } from './usage-event.store';

/** Usage events in (CloudEvents), meters and their totals out; everything scoped by the merchant's API key. */
@Controller('usage')
@UseGuards(MerchantAuthGuard)
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  // the body is `unknown`: events are parsed by usage-event.ts (one pass, per-event errors), not by the DTO pipe
  @ApiDoc(USAGE_DOCS.ingest)
  @Post('events')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  ingest(@CurrentMerchant() merchant: Merchant, @Body() body: unknown, @Headers('content-type') contentType: string | undefined): Promise<IngestCounts> {
    return this.usage.ingest(merchant.merchantId, body, contentType);
  }

  @ApiDoc(USAGE_DOCS.createMeter, { body: CreateMeterDto })
  @Post('meters')
  @Header('cache-control', 'no-store')
  async createMeter(@CurrentMerchant() merchant: Merchant, @Body() body: CreateMeterDto, @Res({ passthrough: true }) response: Response): Promise<MeterView> {
    const { created, meter } = await this.usage.createMeter(merchant.merchantId, meterOf(body));
    if (!created) response.status(200);
    return meter;
  }

  @ApiDoc(USAGE_DOCS.listMeters)
  @Get('meters')
  @Header('cache-control', 'no-store')
  async listMeters(@CurrentMerchant() merchant: Merchant): Promise<{ data: MeterView[] }> {
    return { data: await this.usage.listMeters(merchant.merchantId) };
  }

  @ApiDoc(USAGE_DOCS.getMeter)
  @Get('meters/:key')
  @Header('cache-control', 'no-store')
  getMeter(@CurrentMerchant() merchant: Merchant, @Param() { key }: MeterKeyPath): Promise<MeterView> {
    return this.usage.meter(merchant.merchantId, key);
  }

  @ApiDoc(USAGE_DOCS.summary)
  @Get('meters/:key/summary')
  @Header('cache-control', 'no-store')
  summary(@CurrentMerchant() merchant: Merchant, @Param() { key }: MeterKeyPath, @Query() query: MeterSummaryQuery): Promise<SummaryView> {
    return this.usage.summary(merchant.merchantId, key, {
      subject: query.subject,
      from: query.from === undefined ? undefined : new Date(query.from),
      to: query.to === undefined ? undefined : new Date(query.to),
      windowSize: query.windowSize ?? 'none',
    });
  }
}
