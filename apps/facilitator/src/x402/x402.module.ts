import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { SettlementModule } from '../settlement/settlement.module';
import { X402Controller } from './x402.controller';
import { X402Service } from './x402.service';

@Module({
  imports: [NetworksModule, Eip3009Module, SettlementModule],
  controllers: [X402Controller],
  providers: [X402Service],
})
export class X402Module {}
