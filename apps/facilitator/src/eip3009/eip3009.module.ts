import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { EvmTransferRail } from './evm-transfer.rail';
import { TRANSFER_AUTHORIZATION_RAIL } from './transfer-authorization.rail';

/** The EIP-3009 rail, behind its interface: x402's `exact` scheme, MPP's `evm` method and the settlement engine use it. */
@Module({
  imports: [NetworksModule],
  providers: [{ provide: TRANSFER_AUTHORIZATION_RAIL, useClass: EvmTransferRail }],
  exports: [TRANSFER_AUTHORIZATION_RAIL],
})
export class Eip3009Module {}
