import { keccak256, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

export interface ContractCall {
  to: Address;
  data: Hex;
  gas: bigint;
}

export interface SignedTransaction {
  hash: Hex;
  nonce: number;
  signer: Address;
}

const FEE_CACHE_MS = 1_000;

/**
 * A hot wallet that sends one transaction at a time. It keeps its own nonce (seeded from the pending count,
 * re-read after any send error), signs locally, and hands the transaction hash to the caller *before* the
 * broadcast, so the hash is on record even if the process dies the instant the network sees it.
 */
export class TransactionSigner {
  readonly address: Address;
  private readonly account: PrivateKeyAccount;
  private nextNonce: number | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  private inFlight = 0;

  constructor(
    privateKey: Hex,
    private readonly client: PublicClient,
    private readonly chainId: number,
  ) {
    this.account = privateKeyToAccount(privateKey);
    this.address = this.account.address;
  }

  /** How many sends are queued or running on this signer; the pool picks the least busy. */
  get load(): number {
    return this.inFlight;
  }

  send(call: ContractCall, beforeBroadcast: (tx: SignedTransaction) => Promise<void>): Promise<SignedTransaction> {
    this.inFlight += 1;
    const run = this.tail.then(() => this.sendNow(call, beforeBroadcast));
    this.tail = run.catch(() => undefined);
    return run.finally(() => {
      this.inFlight -= 1;
    });
  }

  private async sendNow(call: ContractCall, beforeBroadcast: (tx: SignedTransaction) => Promise<void>): Promise<SignedTransaction> {
    const nonce = this.nextNonce ?? (await this.client.getTransactionCount({ address: this.address, blockTag: 'pending' }));
    const fees = await this.currentFees();
    const serializedTransaction = await this.account.signTransaction({
      type: 'eip1559',
      chainId: this.chainId,
      nonce,
      to: call.to,
      data: call.data,
      gas: call.gas,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    const tx: SignedTransaction = { hash: keccak256(serializedTransaction), nonce, signer: this.address };
    await beforeBroadcast(tx);
    try {
      await this.client.sendRawTransaction({ serializedTransaction });
    } catch (error) {
      this.nextNonce = undefined;
      throw error;
    }
    this.nextNonce = nonce + 1;
    return tx;
  }

  private async currentFees() {
    if (this.fees && Date.now() - this.fees.at < FEE_CACHE_MS) return this.fees;
    const estimate = await this.client.estimateFeesPerGas();
    this.fees = { at: Date.now(), maxFeePerGas: estimate.maxFeePerGas, maxPriorityFeePerGas: estimate.maxPriorityFeePerGas };
    return this.fees;
  }
}

/** Several hot wallets on one network; each settlement goes to the least busy one. */
export class SignerPool {
  readonly signers: TransactionSigner[];
  private cursor = 0;

  constructor(keys: Hex[], client: PublicClient, chainId: number) {
    this.signers = keys.map((key) => new TransactionSigner(key, client, chainId));
  }

  get addresses(): Address[] {
    return this.signers.map((s) => s.address);
  }

  pick(): TransactionSigner {
    if (this.signers.length === 0) throw new Error('no signer keys are configured for this network');
    let best = this.signers[this.cursor % this.signers.length];
    for (const signer of this.signers) if (signer.load < best.load) best = signer;
    this.cursor += 1;
    return best;
  }
}

export class ReceiptTimeoutError extends Error {
  constructor(readonly hash: Hex, timeoutMs: number) {
    super(`no receipt for ${hash} within ${timeoutMs} ms`);
    this.name = 'ReceiptTimeoutError';
  }
}

/** Polls for a receipt until the deadline. Checks at once: on an automining chain the receipt is already there. */
export async function waitForReceipt(client: PublicClient, hash: Hex, timeoutMs: number, pollingIntervalMs: number): Promise<TransactionReceipt> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const receipt = await client.getTransactionReceipt({ hash }).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
    if (receipt) return receipt;
    const left = deadline - Date.now();
    if (left <= 0) throw new ReceiptTimeoutError(hash, timeoutMs);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollingIntervalMs, left)));
  }
}
