import { Controller, Get, Header, Param, UseGuards } from '@nestjs/common';
import { ApiDoc, ProblemError } from '@mp/platform';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { ChannelBooks, type BookedChannel } from './channel-books.service';
import { ChannelPath } from './channels.dto';
import { CHANNELS_DOCS } from './channels.openapi';

/** Payment channels as the ledger booked them (issue 14 part 6). */
@Controller('channels')
@UseGuards(MerchantAuthGuard)
export class ChannelsController {
  constructor(private readonly channels: ChannelBooks) {}

  @ApiDoc(CHANNELS_DOCS.get)
  @Get(':channelId')
  @Header('cache-control', 'no-store')
  async get(@CurrentMerchant() merchant: Merchant, @Param() { channelId }: ChannelPath) {
    const books = await this.channels.read(merchant.merchantId, channelId);
    if (!books) throw new ProblemError('not_found', `no channel ${channelId} in the books`);
    return channelView(books);
  }
}

function channelView(b: BookedChannel) {
  return {
    channelId: b.channelId,
    scheme: b.scheme,
    network: b.network,
    escrow: b.escrow,
    asset: b.asset,
    payer: b.payer,
    payee: b.payee,
    state: b.state,
    deposit: b.deposit.toString(),
    accepted: b.accepted.toString(),
    spent: b.spent.toString(),
    settled: b.settled.toString(),
    refunded: b.refunded.toString(),
    held: b.held.toString(),
    unspent: b.unspent.toString(),
    graceEndsAt: b.graceEndsAt?.toISOString() ?? null,
    lastEventId: b.lastEventId,
    openedAt: b.openedAt.toISOString(),
    closedAt: b.closedAt?.toISOString() ?? null,
  };
}
