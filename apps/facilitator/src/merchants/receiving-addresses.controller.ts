import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { getAddress } from 'viem';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';
import { MerchantRepository, type ReceivingAddressRow } from './merchant.repository';
import { ReceivingAddressDto, ReceivingAddressPath } from './merchants.dto';
import { MAX_RECEIVING_ADDRESSES, receivingAddress, type ReceivingAddress } from './receiving-addresses';
import { RECEIVING_ADDRESSES_DOCS } from './receiving-addresses.openapi';

export interface ReceivingAddressView {
  network: string;
  /** EIP-55 checksummed */
  address: string;
  createdAt: string;
}

export interface ReceivingAddressList {
  /** true: settlements may pay any address, declared or not */
  allowAnyPayTo: boolean;
  data: ReceivingAddressView[];
}

/**
 * The addresses a merchant is paid at. /settle, /verify and MPP evm charges with a payTo the merchant has not
 * declared for the network are refused (pay_to_not_allowed) unless it allows any (PATCH /merchants/me). Always
 * requires an API key, even in open mode, and only ever touches the key's own merchant.
 */
@Controller('merchants/me/receiving-addresses')
@UseGuards(MerchantAuthGuard)
export class ReceivingAddressesController {
  constructor(private readonly merchants: MerchantRepository) {}

  @ApiDoc(RECEIVING_ADDRESSES_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: MerchantPrincipal): Promise<ReceivingAddressList> {
    const [allowAnyPayTo, rows] = await Promise.all([
      this.merchants.allowAnyPayTo(merchant.merchantId),
      this.merchants.receivingAddresses(merchant.merchantId),
    ]);
    return { allowAnyPayTo, data: rows.map(toView) };
  }

  /** 201 when declared now, 200 when it already was. */
  @ApiDoc(RECEIVING_ADDRESSES_DOCS.declare, { body: ReceivingAddressDto })
  @Post()
  @Header('cache-control', 'no-store')
  async declare(
    @CurrentMerchant() merchant: MerchantPrincipal,
    @Body() body: ReceivingAddressDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ReceivingAddressView> {
    const { network, address } = checkedAddress(body);
    const declared = await this.merchants.declareReceivingAddress(merchant.merchantId, network, address.toLowerCase());
    if (declared.outcome === 'full')
      throw invalid([{ name: 'address', reason: `a merchant declares at most ${MAX_RECEIVING_ADDRESSES} receiving addresses; remove one first` }]);
    res.status(declared.outcome === 'created' ? 201 : 200);
    return toView(declared.row!);
  }

  @ApiDoc(RECEIVING_ADDRESSES_DOCS.remove)
  @Delete(':network/:address')
  @HttpCode(204)
  async remove(@CurrentMerchant() merchant: MerchantPrincipal, @Param() path: ReceivingAddressPath): Promise<void> {
    const { network, address } = checkedAddress(path);
    const removed = await this.merchants.removeReceivingAddress(merchant.merchantId, network, address.toLowerCase());
    if (!removed) throw new ProblemError('not_found', `no receiving address ${address} on ${network}`);
  }
}

function toView(row: ReceivingAddressRow): ReceivingAddressView {
  return { network: row.network, address: getAddress(row.address), createdAt: row.createdAt.toISOString() };
}

/** The address checksummed; the DTO's validation has already refused one that is not receivable. */
function checkedAddress(dto: ReceivingAddressDto): ReceivingAddress {
  const checked = receivingAddress(dto.network, dto.address);
  if (!checked.ok) throw invalid(checked.problems);
  return checked.value;
}

function invalid(problems: { name: string; reason: string }[]): ProblemError {
  return new ProblemError('validation_failed', `invalid field(s): ${problems.map((p) => p.name).join(', ')}`, { invalidParams: problems });
}
