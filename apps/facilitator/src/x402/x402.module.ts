import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { SettlementModule } from '../settlement/settlement.module';
import { Permit2UptoModule } from '../upto/permit2-upto.module';
import { BatchSettlementModule } from './schemes/batch-settlement/batch-settlement.module';
import { BatchSettlementEvmScheme } from './schemes/batch-settlement/batch-settlement-evm.scheme';
import { ExactEvmScheme } from './schemes/exact-evm.scheme';
import { UptoEvmScheme } from './schemes/upto-evm.scheme';
import { X402_SCHEMES, type X402Scheme } from './schemes/x402-scheme';
import { X402Controller } from './x402.controller';
import { X402Service } from './x402.service';

/** A new scheme is one provider and one more entry in X402_SCHEMES' inject list. */
@Module({
  imports: [NetworksModule, Eip3009Module, Permit2UptoModule, SettlementModule, BatchSettlementModule],
  controllers: [X402Controller],
  providers: [
    ExactEvmScheme,
    UptoEvmScheme,
    {
      provide: X402_SCHEMES,
      useFactory: (...schemes: X402Scheme[]) => schemes,
      inject: [ExactEvmScheme, UptoEvmScheme, BatchSettlementEvmScheme],
    },
    X402Service,
  ],
})
export class X402Module {}
