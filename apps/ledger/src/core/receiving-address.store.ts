import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';

/** A merchant's receiving address on one network. */
export interface ReceivingAddress {
  /** CAIP-2: eip155:8453 */
  network: string;
  /** lowercase 0x-hex */
  address: `0x${string}`;
}

/** Where each merchant is paid on chain, learnt from the payments the ledger books (`ledger.receiving_addresses`). */
@Injectable()
export class ReceivingAddressStore {
  constructor(private readonly db: PrismaService) {}

  /** Idempotent: an address already known is left as it is (its first sighting kept). */
  async remember(merchantId: string, network: string, address: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `INSERT INTO ledger.receiving_addresses (merchant_id, network, address) VALUES ($1::uuid, $2, $3) ON CONFLICT DO NOTHING`,
      merchantId,
      network,
      address.toLowerCase(),
    );
  }

  /** Sorted by network, then address. */
  list(merchantId: string): Promise<ReceivingAddress[]> {
    return this.db.$queryRawUnsafe<ReceivingAddress[]>(
      `SELECT network, address FROM ledger.receiving_addresses WHERE merchant_id = $1::uuid ORDER BY network, address`,
      merchantId,
    );
  }
}
