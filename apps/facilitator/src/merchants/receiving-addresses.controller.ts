import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { getAddress } from 'viem';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from './current-merchant';
import { MerchantAuthGuard } from './merchant-auth.guard';
import type { MerchantPrincipal } from './merchant-auth.service';
import { MerchantRepository, type ReceivingAddressRow } from './merchant.repository';
import { MAX_RECEIVING_ADDRESSES, receivingAddress } from './receiving-addresses';
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
    const [allowAnyPayTo, rows] = await Promise.all([this.merchants.allowAnyPayTo(merchant.merchantId), this.merchants.receivingAddresses(merchant.merchantId)]);
    return { allowAnyPayTo, data: rows.map(toView) };
  }

  /** 201 when declared now, 200 when it already was. */
  @ApiDoc(RECEIVING_ADDRESSES_DOCS.declare)
  @Post()
  @Header('cache-control', 'no-store')
  async declare(@CurrentMerchant() merchant: MerchantPrincipal, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<ReceivingAddressView> {
    const fields = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((k) => k !== 'network' && k !== 'address');
    const checked = receivingAddress(fields.network, fields.address);
    const problems = [...(checked.ok ? [] : checked.problems), ...unknown.map((name) => ({ name, reason: 'unknown field' }))];
    if (!checked.ok || problems.length) throw invalid(problems);
    const { network, address } = checked.value;
    const declared = await this.merchants.declareReceivingAddress(merchant.merchantId, network, address.toLowerCase());
    if (declared.outcome === 'full') throw invalid([{ name: 'address', reason: `a merchant declares at most ${MAX_RECEIVING_ADDRESSES} receiving addresses; remove one first` }]);
    res.status(declared.outcome === 'created' ? 201 : 200);
    return toView(declared.row!);
  }

  @ApiDoc(RECEIVING_ADDRESSES_DOCS.remove)
  @Delete(':network/:address')
  @HttpCode(204)
  async remove(@CurrentMerchant() merchant: MerchantPrincipal, @Param('network') network: string, @Param('address') address: string): Promise<void> {
    const checked = receivingAddress(network, address);
    if (!checked.ok) {
      throw new ProblemError('validation_failed', `invalid path parameter(s): ${checked.problems.map((p) => p.name).join(', ')}`, { invalidParams: checked.problems });
    }
    const removed = await this.merchants.removeReceivingAddress(merchant.merchantId, checked.value.network, checked.value.address.toLowerCase());
    if (!removed) throw new ProblemError('not_found', `no receiving address ${checked.value.address} on ${checked.value.network}`);
  }
}

function toView(row: ReceivingAddressRow): ReceivingAddressView {
  return { network: row.network, address: getAddress(row.address), createdAt: row.createdAt.toISOString() };
}

function invalid(problems: { name: string; reason: string }[]): ProblemError {
  return new ProblemError('validation_failed', `invalid field(s): ${problems.map((p) => p.name).join(', ')}`, { invalidParams: problems });
}
