import { Injectable } from '@nestjs/common';

/** Time, injectable so tests can move it. */
@Injectable()
export class Clock {
  nowMs(): number {
    return Date.now();
  }

  nowSeconds(): bigint {
    return BigInt(Math.floor(this.nowMs() / 1000));
  }
}
