export declare const TEST_MNEMONIC: string;

export declare function anvilBinary(): string;

export interface StartAnvilOptions {
  port: number;
  chainId?: number;
  accounts?: number;
  /** Seconds between blocks; omit for automine. */
  blockTime?: number;
  mnemonic?: string;
  readyTimeoutMs?: number;
}

export interface AnvilInstance {
  rpcUrl: string;
  port: number;
  chainId: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

export declare function startAnvil(opts: StartAnvilOptions): Promise<AnvilInstance>;
