import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import type { AccountInput } from '@mp/ledger';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { LedgerService } from '../core/ledger.service';
import { decodeKey, encodeCursor } from './cursor';
import { AccountListQuery, LedgerIdPath } from './queries.dto';
import { AccountBatchPipe } from './requests';
import { accountResultView, accountView } from './views';
import { ACCOUNTS_DOCS } from './accounts.openapi';

/** A merchant's accounts: create (TigerBeetle's create_accounts), list, read with balances. */
@Controller('accounts')
@UseGuards(MerchantAuthGuard)
export class AccountsController {
  constructor(private readonly ledger: LedgerService) {}

  @ApiDoc(ACCOUNTS_DOCS.create)
  @Post()
  @HttpCode(200)
  async create(@CurrentMerchant() merchant: Merchant, @Body(AccountBatchPipe) accounts: AccountInput[]) {
    const results = await this.ledger.createAccounts(merchant.merchantId, accounts);
    return { results: results.map((r, i) => accountResultView(accounts[i], r, i)) };
  }

  @ApiDoc(ACCOUNTS_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@CurrentMerchant() merchant: Merchant, @Query() query: AccountListQuery) {
    const { limit = 100, cursor, asset, code } = query;
    const filter = { ...(asset !== undefined && { asset }), ...(code !== undefined && { code }) };
    const page = await this.ledger.listAccounts(merchant.merchantId, filter, limit, cursor === undefined ? undefined : decodeKey(cursor));
    return { data: page.rows.map(accountView), nextCursor: page.next ? encodeCursor([page.next]) : null };
  }

  @ApiDoc(ACCOUNTS_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() { id }: LedgerIdPath) {
    const [account] = await this.ledger.lookupAccounts(merchant.merchantId, [id]);
    if (!account) throw new ProblemError('not_found', `no account ${id}`);
    return accountView(account);
  }
}
