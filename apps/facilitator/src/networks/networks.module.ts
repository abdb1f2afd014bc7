import { Module } from '@nestjs/common';
import { Clock } from '../x402/clock';
import { NetworkRegistry } from './network-registry';

/** Chains, their clients and hot wallets. */
@Module({
  providers: [NetworkRegistry, Clock],
  exports: [NetworkRegistry, Clock],
})
export class NetworksModule {}
