import { Body, Controller, Get, Header, HttpCode, Logger, Param, Post, Query, UseGuards } from '@nestjs/common';
import type { TransferInput, TransferResult } from '@mp/ledger';
import { ApiDoc, isUnavailableError, ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { LedgerService } from '../core/ledger.service';
import { decodePosition, encodePosition } from './cursor';
import { LedgerIdPath, TransferListQuery } from './queries.dto';
import { TransferBatchPipe } from './requests';
import { transferResultView, transferView } from './views';
import { TRANSFERS_DOCS } from './transfers.openapi';

/**
 * A merchant's transfers. POST takes a batch and answers 200 with one TigerBeetle result per transfer, whatever
 * they are (like TigerBeetle); only a malformed request is a 400, and then nothing of it is applied, and an
 * unreachable database a 503 (the outcome is then unknown: send the same ids again).
 */
@Controller('transfers')
@UseGuards(MerchantAuthGuard)
export class TransfersController {
  private readonly logger = new Logger(TransfersController.name);

  constructor(private readonly ledger: LedgerService) {}

  @ApiDoc(TRANSFERS_DOCS.create)
  @Post()
  @HttpCode(200)
  async create(@CurrentMerchant() merchant: Merchant, @Body(TransferBatchPipe) transfers: TransferInput[]) {
    const results = await this.ledger.createTransfers(merchant.merchantId, transfers).catch((error: unknown) => this.unjudged(merchant, transfers, error));
    return { results: results.map((r, i) => transferResultView(transfers[i], r, i)) };
  }

  /**
   * The last resort when the write itself failed for a reason other than an unreachable database (a transaction
   * that kept losing races, a bug): its transaction was rolled back, so every transfer answers internal_error
   * rather than the request a 500, and the error is logged for the operator.
   */
  private unjudged(merchant: Merchant, transfers: TransferInput[], error: unknown): TransferResult[] {
    if (error instanceof ProblemError || isUnavailableError(error)) throw error;
    this.logger.error(
      `a request of ${transfers.length} transfer(s) of merchant ${merchant.merchantId} answered internal_error: its write failed (first id ${transfers[0].id})`,
      error instanceof Error ? error.stack : String(error),
    );
    return transfers.map(() => ({ result: 'internal_error' }));
  }

  @ApiDoc(TRANSFERS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: Merchant, @Query() query: TransferListQuery) {
    const { limit = 100, cursor, account, status, asset, code, from, to } = query;
    const page = await this.ledger.listTransfers(
      merchant.merchantId,
      {
        ...(asset !== undefined && { asset }),
        ...(code !== undefined && { code }),
        ...(from !== undefined && { from: new Date(from) }),
        ...(to !== undefined && { to: new Date(to) }),
        accountId: account,
        status,
      },
      limit,
      cursor === undefined ? undefined : decodePosition(cursor),
    );
    if (!page) throw new ProblemError('not_found', `no account ${account}`);
    return { data: page.rows.map(transferView), nextCursor: page.next ? encodePosition(page.next) : null };
  }

  @ApiDoc(TRANSFERS_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() { id }: LedgerIdPath) {
    const [transfer] = await this.ledger.lookupTransfers(merchant.merchantId, [id]);
    if (!transfer) throw new ProblemError('not_found', `no transfer ${id}`);
    return transferView(transfer);
  }
}
