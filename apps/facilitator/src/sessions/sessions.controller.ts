import { Body, Controller, Get, Header, Param, Post, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc, ZodBodyPipe } from '@mp/platform';
import { CurrentMerchant, OpenModeAllowed } from '../merchants/current-merchant';
import { MerchantAuthGuard } from '../merchants/merchant-auth.guard';
import type { MerchantPrincipal } from '../merchants/merchant-auth.service';
import { channelIdParamSchema, sessionChargeSchema, type SessionChargeInput } from './sessions.api';
import { SESSIONS_DOCS } from './sessions.openapi';
import { SessionsService, type ChannelView } from './sessions.service';

/**
 * MPP evm sessions for merchants, between the credentials /mpp/settle takes: charge a channel before delivering, and
 * read its state. Authenticated like /mpp/*.
 */
@Controller('mpp/sessions')
@UseGuards(MerchantAuthGuard)
@OpenModeAllowed()
export class SessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @ApiDoc(SESSIONS_DOCS.charge)
  @Post('charges')
  async charge(
    @Body(new ZodBodyPipe(sessionChargeSchema)) body: SessionChargeInput,
    @CurrentMerchant() merchant: MerchantPrincipal | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<Record<string, unknown>> {
    const answer = await this.sessions.charge(body, merchant?.merchantId ?? null);
    res.status(answer.status);
    for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
    return answer.body;
  }

  @ApiDoc(SESSIONS_DOCS.channel)
  @Get(':channelId')
  @Header('cache-control', 'no-store')
  channel(
    @Param('channelId', new ZodBodyPipe(channelIdParamSchema)) channelId: `0x${string}`,
    @CurrentMerchant() merchant: MerchantPrincipal | undefined,
  ): Promise<ChannelView> {
    return this.sessions.view(channelId, merchant?.merchantId ?? null);
  }
}
