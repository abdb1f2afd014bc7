import { Body, Controller, Get, Header, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { LedgerService } from '../core/ledger.service';
import type { TransferStatus } from '../core/transfer.queries';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { decodePosition, encodePosition } from './cursor';
import { parseId, parseQuery, parseTransfers, transferListQuery } from './requests';
import { transferResultView, transferView } from './views';

/**
 * A merchant's transfers. POST takes a batch and answers 200 with one TigerBeetle result per transfer, whatever
 * they are (like TigerBeetle); only a malformed request is a 400, and then nothing of it is applied.
 */
@Controller('transfers')
@UseGuards(MerchantAuthGuard)
export class TransfersController {
  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly ledger: LedgerService,
  ) {}

  @Post()
  @HttpCode(200)
  async create(@CurrentMerchant() merchant: Merchant, @Body() body: unknown) {
    const transfers = parseTransfers(body, this.config.batchMax);
    const results = await this.ledger.createTransfers(merchant.merchantId, transfers);
    return { results: results.map((r, i) => transferResultView(transfers[i], r, i)) };
  }

  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: Merchant, @Query() query: unknown) {
    const { limit, cursor, account, status, ...filter } = parseQuery(transferListQuery, query);
    const page = await this.ledger.listTransfers(
      merchant.merchantId,
      { ...filter, accountId: account, status: status as TransferStatus | undefined },
      limit,
      cursor === undefined ? undefined : decodePosition(cursor),
    );
    if (!page) throw new ProblemError('not_found', `no account ${account}`);
    return { data: page.rows.map(transferView), nextCursor: page.next ? encodePosition(page.next) : null };
  }

  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param('id') id: string) {
    const [transfer] = await this.ledger.lookupTransfers(merchant.merchantId, [parseId(id)]);
    if (!transfer) throw new ProblemError('not_found', `no transfer ${id}`);
    return transferView(transfer);
  }
}
