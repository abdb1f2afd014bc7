import { Controller, Get, Header, Query, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { AssetDirectory } from '../reconciliation/asset-directory';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { LedgerService } from '../core/ledger.service';
import { decodePosition, encodePosition } from './cursor';
import { parseQuery, statementQuery } from './requests';
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
  async get(@CurrentMerchant() merchant: Merchant, @Query() query: unknown) {
    const { account, from = new Date(0), to = new Date(), limit, cursor } = parseQuery(statementQuery, query);
    const statement = await this.ledger.statement(merchant.merchantId, account, { from, to }, limit, cursor === undefined ? undefined : decodePosition(cursor));
    if (!statement) throw new ProblemError('not_found', `no account ${account}`);
    return statementView(statement, statement.next ? encodePosition(statement.next) : null, await this.assets.describe(statement.account.asset));
  }
}
