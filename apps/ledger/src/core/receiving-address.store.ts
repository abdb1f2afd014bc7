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
    await this.db.ledgerReceivingAddress.createMany({ data: { merchantId, network, address: address.toLowerCase() }, skipDuplicates: true });
  }

  /** Sorted by network, then address. */
  async list(merchantId: string): Promise<ReceivingAddress[]> {
    const rows = await this.db.ledgerReceivingAddress.findMany({
      where: { merchantId },
      orderBy: [{ network: 'asc' }, { address: 'asc' }],
      select: { network: true, address: true },
    });
    return rows.map((r) => ({ network: r.network, address: r.address as `0x${string}` }));
  }
}
