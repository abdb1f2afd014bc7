/** CAIP-2 helpers and the x402 v1 network names, which the edge maps to CAIP-2 before anything else sees them. */
const CAIP2 = /^([-a-z0-9]{3,8}):([-_a-zA-Z0-9]{1,32})$/;

export function isCaip2(network: string): boolean {
  return CAIP2.test(network);
}

/** The names x402 v1 clients send, as the reference SDK maps them. Operators may add or override names by config. */
export const DEFAULT_V1_NETWORKS: Readonly<Record<string, string>> = Object.freeze({
  base: 'eip155:8453',
  'base-sepolia': 'eip155:84532',
  ethereum: 'eip155:1',
  sepolia: 'eip155:11155111',
  polygon: 'eip155:137',
  'polygon-amoy': 'eip155:80002',
  avalanche: 'eip155:43114',
  'avalanche-fuji': 'eip155:43113',
  arbitrum: 'eip155:42161',
  'arbitrum-sepolia': 'eip155:421614',
  optimism: 'eip155:10',
  sei: 'eip155:1329',
  'sei-testnet': 'eip155:1328',
  celo: 'eip155:42220',
  iotex: 'eip155:4689',
  monad: 'eip155:143',
  anvil: 'eip155:31337',
  localhost: 'eip155:31337',
});
