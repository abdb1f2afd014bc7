// The local chain manifest written by scripts/chain.mjs and test/global-setup.ts, read by the apps and tests.
// No Nest here: plain zod + node:fs.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

type Hex = `0x${string}`;
type Address = `0x${string}`;

const addressSchema = z.custom<Address>((v) => typeof v === 'string' && /^0x[0-9a-fA-F]{40}$/.test(v), {
  message: 'expected a 0x-prefixed 20-byte hex address',
});

const privateKeySchema = z.custom<Hex>((v) => typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v), {
  message: 'expected a 0x-prefixed 32-byte hex private key',
});

const ManifestAccountSchema = z.object({
  address: addressSchema,
  privateKey: privateKeySchema,
});

const ManifestTokenSchema = z.object({
  address: addressSchema,
  /** EIP-712 domain name (and ERC-20 name). */
  name: z.string().min(1),
  /** EIP-712 domain version ("2" for USDC; informational for tokens without EIP-712). */
  version: z.string().min(1),
  decimals: z.number().int().min(0).max(255),
  symbol: z.string().min(1),
});

const ChainManifestSchema = z.object({
  rpcUrl: z.url(),
  chainId: z.number().int().positive(),
  /** CAIP-2 id, `eip155:<chainId>`. */
  network: z.string().regex(/^eip155:\d+$/),
  tokens: z.object({
    /** MockUSDC: EIP-3009 like Circle's FiatTokenV2_2. */
    usdc: ManifestTokenSchema,
    /** Like usdc, but transferWithAuthorization emits Transfer(value - 1). */
    misreportingUsdc: ManifestTokenSchema,
    /** Plain ERC-20 without EIP-3009. */
    plain: ManifestTokenSchema,
  }),
  contracts: z.object({
    multicall3: addressSchema,
    /** ERC-1271 SmartWallet owned by accounts.smartWalletOwner (payer #0), funded like a payer. */
    smartWallet: addressSchema,
    smartWalletFactory: addressSchema,
    /** Our Permit2 (SignatureTransfer) at its canonical address; every payer and the SmartWallet approved it for the maximum. */
    permit2: addressSchema,
    /** The x402 upto Permit2 proxy at its canonical address. */
    x402UptoPermit2Proxy: addressSchema,
    /** EvmPaymentChannelEscrow: the MPP evm `session` escrow (CLOSE_GRACE_PERIOD 15 min). */
    sessionEscrow: addressSchema,
    /** x402 batch-settlement escrow, at the canonical address @x402/evm hard-codes (0x4020074e…0003). */
    batchSettlement: addressSchema,
    /** Its ERC-3009 deposit collector, at the canonical address (0x4020806…0004). */
    erc3009DepositCollector: addressSchema,
  }),
  accounts: z.object({
    deployer: ManifestAccountSchema,
    facilitatorSigners: z.array(ManifestAccountSchema).min(1),
    /** The merchant's payTo. */
    merchant: ManifestAccountSchema,
    payers: z.array(ManifestAccountSchema).min(1),
    smartWalletOwner: ManifestAccountSchema,
  }),
  deployedAt: z.iso.datetime({ offset: true }),
});

export type ManifestAccount = z.infer<typeof ManifestAccountSchema>;
export type ManifestToken = z.infer<typeof ManifestTokenSchema>;
export type ChainManifest = z.infer<typeof ChainManifestSchema>;

/** Validate an already-parsed manifest object. Throws with a readable list of problems. */
function parseChainManifest(data: unknown, source = 'chain manifest'): ChainManifest {
  const result = ChainManifestSchema.safeParse(data);
  if (!result.success) {
    throw new Error(`Invalid ${source}:\n${z.prettifyError(result.error)}`);
  }
  return result.data;
}

/**
 * Read and validate the chain manifest JSON. `path` defaults to $CHAIN_MANIFEST, then `.local/chain.json`
 * (relative paths resolve against the current working directory).
 */
export function loadChainManifest(path: string = process.env.CHAIN_MANIFEST ?? '.local/chain.json'): ChainManifest {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT'
        ? `Chain manifest not found at ${file}: start the local chain with \`npm run chain\` (or set CHAIN_MANIFEST)`
        : `Cannot read chain manifest ${file}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`Chain manifest ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return parseChainManifest(json, `chain manifest ${file}`);
}
