import { Controller, Get, Header, Query, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { AssetDirectory } from '../reconciliation/asset-directory';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { LedgerService } from '../core/ledger.service';
import { decodePosition, encodePosition } from './cursor';
import { StatementQuery } from './queries.dto';
import { statementView } from './views';
import { STATEMENTS_DOCS } from './statements.openapi';

/**
 * An account's statement for a period: opening balance, postings with running balances, closing balance; amounts in
 * atomic units and, when the asset is known (AssetDirectory), in its decimals with its symbol.
 */
@Controller('statements')
@UseGuards(MerchantAuthGuard)
export class StatementsController {
  constructor(
    private readonly ledger: LedgerService,
    private readonly assets: AssetDirectory,
  ) {}

  @ApiDoc(STATEMENTS_DOCS.get)
  @Get()
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Query() query: StatementQuery) {
    const { account, limit = 1000, cursor } = query;
    const period = { from: query.from === undefined ? new Date(0) : new Date(query.from), to: query.to === undefined ? new Date() : new Date(query.to) };
    const statement = await this.ledger.statement(merchant.merchantId, account, period, limit, cursor === undefined ? undefined : decodePosition(cursor));
    if (!statement) throw new ProblemError('not_found', `no account ${account}`);
    return statementView(statement, statement.next ? encodePosition(statement.next) : null, await this.assets.describe(statement.account.asset));
  }
}
