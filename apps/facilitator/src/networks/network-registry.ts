import { Inject, Injectable } from '@nestjs/common';
import { getAddress, type Address, type PublicClient } from 'viem';
import { createNetworkClient, SignerPool, type AssetConfig, type NetworkConfig } from '@mp/chain';
import type { ServedNetworks } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { networkIdOf, v1NameMap, v1NamesOf } from './network-names';

export interface Network {
  config: NetworkConfig;
  client: PublicClient;
  signers: SignerPool;
  /** Accepted assets by lowercase address. */
  assets: Map<string, AssetConfig>;
}

/** Every configured network with its RPC client, hot wallets and asset allowlist, looked up by CAIP-2 or v1 name. */
@Injectable()
export class NetworkRegistry implements ServedNetworks {
  private readonly byId = new Map<string, Network>();
  private readonly v1Names: ReadonlyMap<string, string>;

  constructor(@Inject(FACILITATOR_CONFIG) config: FacilitatorConfig) {
    for (const network of config.networks) {
      const client = createNetworkClient(network, config.rpcTimeoutMs);
      this.byId.set(network.network, {
        config: network,
        client,
        signers: new SignerPool(network.signerKeys, client, network.chainId, network.maxFeePerGas),
        assets: new Map(network.assets.map((a) => [a.address.toLowerCase(), { ...a, address: getAddress(a.address) }])),
      });
    }
    this.v1Names = v1NameMap(config.networks);
  }

  all(): Network[] {
    return [...this.byId.values()];
  }

  /** Resolves a CAIP-2 id (v2) or a v1 network name to a configured network. */
  resolve(network: string, x402Version: 1 | 2): Network | undefined {
    const id = networkIdOf(network, x402Version, this.v1Names);
    return id === undefined ? undefined : this.byId.get(id);
  }

  networkId(network: string, x402Version: 1 | 2): string | undefined {
    return this.resolve(network, x402Version)?.config.network;
  }

  assetAddress(networkId: string, asset: string): Address | undefined {
    const network = this.byId.get(networkId);
    return network && this.asset(network, asset)?.address;
  }

  /** The v1 names each network answers to, for /supported. */
  v1NamesOf(network: string): string[] {
    return v1NamesOf(network, this.v1Names);
  }

  asset(network: Network, address: string): AssetConfig | undefined {
    return network.assets.get(address.toLowerCase());
  }

  signerAddresses(): Address[] {
    return [...new Set(this.all().flatMap((n) => n.signers.addresses))];
  }
}
