import { Module } from '@nestjs/common';
import { Clock } from '../x402/clock';
import { ExactEvmScheme } from '../x402/exact-evm/exact-evm.scheme';
import { NetworkRegistry } from './network-registry';

/** Chains, their clients and hot wallets, and the scheme that runs on them. */
@Module({
  providers: [NetworkRegistry, Clock, ExactEvmScheme],
  exports: [NetworkRegistry, Clock, ExactEvmScheme],
})
export class NetworksModule {}
