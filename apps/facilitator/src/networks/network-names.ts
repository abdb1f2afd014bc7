import { DEFAULT_V1_NETWORKS, isCaip2 } from '@mp/x402';

/**
 * The x402 v1 names of the configured networks, name → CAIP-2 id: each network's own `v1Names` first, then the
 * well-known names (`base`, `sepolia`, …) of configured networks that no network claimed for itself.
 */
export function v1NameMap(
  networks: readonly { network: string; v1Names: readonly string[] }[],
  wellKnown: Readonly<Record<string, string>> = DEFAULT_V1_NETWORKS,
): Map<string, string> {
  const names = new Map<string, string>();
  for (const network of networks) for (const name of network.v1Names) names.set(name, network.network);
  const configured = new Set(networks.map((n) => n.network));
  for (const [name, caip2] of Object.entries(wellKnown)) {
    if (!names.has(name) && configured.has(caip2)) names.set(name, caip2);
  }
  return names;
}

/**
 * The CAIP-2 id a request's network names: v2 names networks by CAIP-2 id only; v1 by its names, and by CAIP-2 id
 * too. Undefined: a v1 name no configured network answers to. Whether the id is configured is the caller's question.
 */
export function networkIdOf(network: string, x402Version: 1 | 2, v1Names: ReadonlyMap<string, string>): string | undefined {
  return x402Version === 1 && !isCaip2(network) ? v1Names.get(network) : network;
}

/** The v1 names a network answers to, for /supported. */
export function v1NamesOf(network: string, v1Names: ReadonlyMap<string, string>): string[] {
  return [...v1Names.entries()].filter(([, id]) => id === network).map(([name]) => name);
}
