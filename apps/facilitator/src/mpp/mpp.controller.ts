import { Body, Controller, Get, HttpCode, Post, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { ApiDoc, ZodBodyPipe } from '@mp/platform';
import { CurrentMerchant, OpenModeAllowed } from '../merchants/current-merchant';
import { MerchantAuthGuard } from '../merchants/merchant-auth.guard';
import type { MerchantPrincipal } from '../merchants/merchant-auth.service';
import { credentialBodySchema, termsSchema, type CredentialBody, type TermsInput } from './mpp.api';
import { MppService, type ChallengeIssuance, type IssuedChallenges, type MppAnswer } from './mpp.service';
import { MPP_DOCS } from './mpp.openapi';

/**
 * MPP for merchants: issue challenges for a route, then verify or settle the credential a client sent back.
 * Payment failures answer with the spec's status, problem+json and fresh WWW-Authenticate challenges, ready to relay.
 */
@Controller('mpp')
@UseGuards(MerchantAuthGuard)
@OpenModeAllowed()
export class MppController {
  constructor(private readonly mpp: MppService) {}

  @ApiDoc(MPP_DOCS.supported)
  @Get('supported')
  supported(): { methods: { method: string; intents: string[] }[] } {
    return { methods: this.mpp.methods() };
  }

  @ApiDoc(MPP_DOCS.challenges)
  @Post('challenges')
  @HttpCode(201)
  challenges(@Body(new ZodBodyPipe(termsSchema)) terms: TermsInput, @CurrentMerchant() merchant: MerchantPrincipal | undefined): Promise<IssuedChallenges> {
    return this.mpp.issue(terms, merchant?.merchantId ?? null);
  }

  @ApiDoc(MPP_DOCS.issuance)
  @Post('issuance')
  @HttpCode(200)
  issuance(@Body(new ZodBodyPipe(termsSchema)) terms: TermsInput, @CurrentMerchant() merchant: MerchantPrincipal | undefined): Promise<ChallengeIssuance> {
    return this.mpp.issuance(terms, merchant?.merchantId ?? null);
  }

  @ApiDoc(MPP_DOCS.verify)
  @Post('verify')
  async verify(
    @Body(new ZodBodyPipe(credentialBodySchema)) body: CredentialBody,
    @CurrentMerchant() merchant: MerchantPrincipal | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    return send(res, await this.mpp.verify(body, merchant?.merchantId ?? null));
  }

  @ApiDoc(MPP_DOCS.settle)
  @Post('settle')
  async settle(
    @Body(new ZodBodyPipe(credentialBodySchema)) body: CredentialBody,
    @CurrentMerchant() merchant: MerchantPrincipal | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    return send(res, await this.mpp.settle(body, merchant?.merchantId ?? null));
  }
}

function send(res: Response, answer: MppAnswer): Record<string, unknown> {
  res.status(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  return answer.body;
}
