import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { Permit2UptoRail } from './permit2-upto.rail';

/** The Permit2 rail of x402 `upto`: the scheme's verify/settle and the settlement worker use it. */
@Module({
  imports: [NetworksModule],
  providers: [Permit2UptoRail],
  exports: [Permit2UptoRail],
})
export class Permit2UptoModule {}
