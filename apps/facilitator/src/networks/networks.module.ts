import { Module } from '@nestjs/common';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { Clock, clockFor } from '../x402/clock';
import { NetworkRegistry } from './network-registry';

/** Chains, their clients and hot wallets. */
@Module({
  providers: [NetworkRegistry, { provide: Clock, inject: [FACILITATOR_CONFIG], useFactory: (config: FacilitatorConfig) => clockFor(config.clockRpcUrl) }],
  exports: [NetworkRegistry, Clock],
})
export class NetworksModule {}
