import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc } from '@mp/platform';
import { BRIEFING_DOCS } from './briefing.openapi';
import type { ServedSubscription } from './subscription-paywall';

/** The subscription's product. Reaching this handler means the subscription paywall activated or found the subscription. */
@Controller('mpp')
export class BriefingController {
  @ApiDoc(BRIEFING_DOCS.briefing)
  @Get('briefing')
  briefing(@Res({ passthrough: true }) res: Response) {
    const served = res.locals.subscription as ServedSubscription;
    return {
      ...served,
      issuedAt: new Date().toISOString(),
      items: ['Settlement volumes on chain rose overnight.', 'Stablecoin fees held steady.', 'Three new agents listed paid skills.'],
    };
  }
}
