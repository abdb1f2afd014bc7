import type { ChainManifest, ManifestAccount } from '../../libs/chain/src/manifest.js';

export declare const MULTICALL3_ADDRESS: '0xcA11bde05977b3631167028862bE2a173976CA11';
export declare const MINT_AMOUNT: bigint;
export declare const SMART_WALLET_SALT: `0x${string}`;
export declare const ACCOUNT_LAYOUT: {
  readonly deployer: number;
  readonly facilitatorSigners: readonly number[];
  readonly merchant: number;
  readonly payers: readonly [first: number, last: number];
};

export declare function deriveAccounts(count: number, mnemonic?: string): ManifestAccount[];

export declare function deployLocalChain(opts: { rpcUrl: string; mnemonic?: string; log?: (msg: string) => void }): Promise<ChainManifest>;

/** Writes pretty JSON (mkdir -p, atomic rename); returns the absolute path. */
export declare function writeManifest(file: string, manifest: ChainManifest): string;
