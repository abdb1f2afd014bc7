import { Body, Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { PageQuery, ReceivingAddressDto, SetWebhookDto, UpdateMerchantSettingsDto } from '../merchants/merchants.dto';
import { ApiKeyPath, CreateApiKeyDto, CreateMerchantDto, DeliveriesQuery, DeliveryPath, MerchantPath, MerchantReceivingAddressPath } from './admin.dto';
import {
  AdminService,
  type AdminApiKey,
  type AdminMerchant,
  type AdminReceivingAddress,
  type AdminWebhookDelivery,
  type CreatedApiKey,
  type CreatedMerchant,
  type Page,
} from './admin.service';
import { OperatorGuard } from './operator-auth';
import { ApiDoc } from '@mp/platform';
import { ADMIN_MERCHANTS_DOCS } from './admin-merchants.openapi';

/**
 * The merchant admin API, for the operator only (OPERATOR_TOKEN; a merchant's API key is refused like any wrong
 * token). Bodies, query strings and path parameters are DTO classes checked by the global validation pipe; a bad one
 * is a `validation_failed` problem naming every field. Secrets (API keys, webhook secrets) are in the answer that makes
 * them and never again. scripts/merchants.mjs is a client of this API.
 */
@Controller('admin/merchants')
@UseGuards(OperatorGuard)
export class AdminMerchantsController {
  constructor(private readonly admin: AdminService) {}

  @ApiDoc(ADMIN_MERCHANTS_DOCS.create, { body: CreateMerchantDto })
  @Post()
  @Header('cache-control', 'no-store')
  create(@Body() body: CreateMerchantDto): Promise<CreatedMerchant> {
    return this.admin.createMerchant(body);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  list(@Query() query: PageQuery): Promise<Page<AdminMerchant>> {
    return this.admin.listMerchants(query);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.get)
  @Get(':merchantId')
  @Header('cache-control', 'no-store')
  get(@Param() path: MerchantPath): Promise<AdminMerchant> {
    return this.admin.merchant(path.merchantId);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.update, { body: UpdateMerchantSettingsDto })
  @Patch(':merchantId')
  @Header('cache-control', 'no-store')
  update(@Param() path: MerchantPath, @Body() body: UpdateMerchantSettingsDto): Promise<AdminMerchant> {
    return this.admin.setAllowAnyPayTo(path.merchantId, body.allowAnyPayTo);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.disable)
  @Post(':merchantId/disable')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  disable(@Param() path: MerchantPath): Promise<AdminMerchant> {
    return this.admin.setDisabled(path.merchantId, true);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.enable)
  @Post(':merchantId/enable')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  enable(@Param() path: MerchantPath): Promise<AdminMerchant> {
    return this.admin.setDisabled(path.merchantId, false);
  }

  /** 201 when declared now, 200 when it already was. */
  @ApiDoc(ADMIN_MERCHANTS_DOCS.declareReceivingAddress, { body: ReceivingAddressDto })
  @Post(':merchantId/receiving-addresses')
  @Header('cache-control', 'no-store')
  async declareReceivingAddress(
    @Param() path: MerchantPath,
    @Body() body: ReceivingAddressDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AdminReceivingAddress> {
    const declared = await this.admin.declareReceivingAddress(path.merchantId, body.network, body.address);
    res.status(declared.created ? 201 : 200);
    return declared.address;
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.removeReceivingAddress)
  @Delete(':merchantId/receiving-addresses/:network/:address')
  @HttpCode(204)
  removeReceivingAddress(@Param() path: MerchantReceivingAddressPath): Promise<void> {
    return this.admin.removeReceivingAddress(path.merchantId, path.network, path.address);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.rotateMppSecret)
  @Post(':merchantId/mpp-secret/rotate')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  rotateMppSecret(@Param() path: MerchantPath): Promise<{ merchantId: string; rotatedAt: string }> {
    return this.admin.rotateMppSecret(path.merchantId);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.createApiKey, { body: CreateApiKeyDto })
  @Post(':merchantId/api-keys')
  @Header('cache-control', 'no-store')
  createApiKey(@Param() path: MerchantPath, @Body() body: CreateApiKeyDto): Promise<CreatedApiKey> {
    return this.admin.createApiKey(path.merchantId, body.name);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.revokeApiKey)
  @Post(':merchantId/api-keys/:keyId/revoke')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  revokeApiKey(@Param() path: ApiKeyPath): Promise<AdminApiKey> {
    return this.admin.revokeApiKey(path.merchantId, path.keyId);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.setWebhook, { body: SetWebhookDto })
  @Put(':merchantId/webhook')
  @Header('cache-control', 'no-store')
  setWebhook(@Param() path: MerchantPath, @Body() body: SetWebhookDto): Promise<{ merchantId: string; webhookUrl: string | null }> {
    return this.admin.setWebhookUrl(path.merchantId, body.webhookUrl);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.rotateWebhookSecret)
  @Post(':merchantId/webhook/rotate-secret')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  rotateWebhookSecret(@Param() path: MerchantPath): Promise<{ merchantId: string; webhookSecret: string }> {
    return this.admin.rotateWebhookSecret(path.merchantId);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.deliveries)
  @Get(':merchantId/webhook-deliveries')
  @Header('cache-control', 'no-store')
  deliveries(@Param() path: MerchantPath, @Query() query: DeliveriesQuery): Promise<Page<AdminWebhookDelivery>> {
    return this.admin.deliveries(path.merchantId, query);
  }

  @ApiDoc(ADMIN_MERCHANTS_DOCS.resend)
  @Post(':merchantId/webhook-deliveries/:deliveryId/resend')
  @HttpCode(202)
  @Header('cache-control', 'no-store')
  resend(@Param() path: DeliveryPath): Promise<AdminWebhookDelivery> {
    return this.admin.resend(path.merchantId, path.deliveryId);
  }
}
