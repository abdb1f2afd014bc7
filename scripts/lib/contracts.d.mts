export declare const REPO_ROOT: string;
export declare const CONTRACTS_DIR: string;
export declare const OUT_DIR: string;
export declare const CONTRACT_NAMES: readonly string[];

export interface ContractArtifact {
  sourceName: string;
  abi: readonly unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

export declare function compileContracts(opts?: { force?: boolean; log?: (msg: string) => void }): {
  key: string;
  cached: boolean;
  ms: number;
  artifacts: Record<string, ContractArtifact>;
};
