import { ecdsaSign } from 'secp256k1';
import { performance } from 'node:perf_hooks';
import {
  bytesToHex,
  hexToBytes,
  serializeTransaction,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type TransactionSerializableEIP1559,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { rpcErrorCode } from './errors';
import { keccak256 } from './keccak';

export interface ContractCall {
  to: Address;
  data: Hex;
  gas: bigint;
}

export interface SignedTransaction {
  hash: Hex;
  nonce: number;
  signer: Address;
  /** The serialized signed transaction, kept so it can be broadcast again after a crash. */
  raw: Hex;
  to: Address;
  data: Hex;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** Its receipt, when the node answered the broadcast with it (eth_sendRawTransactionSync). */
  receipt?: TransactionReceipt;
}

/**
 * How a network's node takes transactions, as its answers have shown; shared by the network's wallets. Once a
 * transaction was in a block at once (the worker's quick receipt reads after a plain send), a broadcast is
 * eth_sendRawTransactionSync (EIP-7966: geth 1.16.6+, reth, anvil), whose answer is the receipt: one round trip where
 * the send and the receipt reads took two or more. A wallet sends one transaction at a time, so a broadcast that waits
 * for a block is made only when no other send waits for the wallet, and must not wait long: an answer later than
 * SYNC_SEND_AT_ONCE_MS, or none within SYNC_SEND_WAIT_MS, turns the network back to plain sends.
 */
export class MiningPace {
  /** False once the node said it has no eth_sendRawTransactionSync. */
  syncSend = true;
  /** Whether the last transaction sent was in a block at once; undefined until one was sent. */
  minesAtOnce: boolean | undefined = undefined;
}

/** A synchronous send answered later than this says the network does not mine at once: plain sends follow. */
const SYNC_SEND_AT_ONCE_MS = 50;
/** How long a wallet waits for a synchronous send's answer before it takes the broadcast as sent, answer unknown. */
const SYNC_SEND_WAIT_MS = 1_000;
/** EIP-7966: in the mempool, no receipt within the node's timeout (4), or not ready to be processed yet (5). */
const SYNC_SEND_PENDING_CODES = new Set([4, 5]);
/** JSON-RPC "method not found" and EIP-1474 "method not supported". */
const METHOD_UNKNOWN_CODES = new Set([-32601, -32004]);

/**
 * No answer to a synchronous send within SYNC_SEND_WAIT_MS: the node may hold the transaction (it answers once a block
 * has it), so it is followed as a broadcast whose answer was lost (not a viem error: isDeliveryUncertain).
 */
export class SyncSendWaitError extends Error {
  constructor(hash: Hex) {
    super(`no answer to eth_sendRawTransactionSync of ${hash} within ${SYNC_SEND_WAIT_MS} ms; following it as perhaps sent`);
    this.name = 'SyncSendWaitError';
  }
}

/** A replacement must outbid its predecessor by at least 10% on both fees (geth's rule); we bump by 25%. */
const REPLACEMENT_BUMP_PERCENT = 125n;

const FEE_CACHE_MS = 1_000;
/** Fees older than FEE_CACHE_MS but younger than this are still bid while fresh ones are read in the background. */
const FEE_STALE_MS = 3_000;

/**
 * A hot wallet that sends one transaction at a time. It keeps its own nonce (seeded from the pending count,
 * re-read after any send error), signs locally, and hands the transaction hash to the caller *before* the
 * broadcast, so the hash is on record even if the process dies the instant the network sees it.
 */
export class TransactionSigner {
  readonly address: Address;
  private readonly privateKey: Uint8Array;
  private nextNonce: number | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  private feeRead: Promise<unknown> | undefined;
  private inFlight = 0;
  /** Whether this process may send from the wallet now (it holds the wallet's lease). */
  enabled = true;

  constructor(
    privateKey: Hex,
    private readonly client: PublicClient,
    private readonly chainId: number,
    /** The most this wallet ever bids per gas (unset: no ceiling). */
    private readonly feeCap?: bigint,
    private readonly pace = new MiningPace(),
  ) {
    this.address = privateKeyToAccount(privateKey).address;
    this.privateKey = hexToBytes(privateKey);
  }

  /** How many sends are queued or running on this signer; the pool picks the least busy. */
  get load(): number {
    return this.inFlight;
  }

  send(call: ContractCall, beforeBroadcast: (tx: SignedTransaction) => Promise<void>): Promise<SignedTransaction> {
    return this.serialized(() => this.sendNow(call, beforeBroadcast));
  }

  /**
   * Replaces a transaction stuck in the mempool: same nonce and call, fees raised by a quarter (at least the
   * current market), so at most one of the two is ever mined.
   */
  replace(previous: SignedTransaction, beforeBroadcast: (tx: SignedTransaction) => Promise<void>): Promise<SignedTransaction> {
    return this.serialized(async () => {
      const market = await this.currentFees(true);
      const bump = (fee: bigint, floor: bigint) => {
        const raised = (fee * REPLACEMENT_BUMP_PERCENT) / 100n + 1n;
        return raised > floor ? raised : floor;
      };
      const maxPriorityFeePerGas = bump(previous.maxPriorityFeePerGas, market.maxPriorityFeePerGas);
      const maxFeePerGas = bump(previous.maxFeePerGas, market.maxFeePerGas > maxPriorityFeePerGas ? market.maxFeePerGas : maxPriorityFeePerGas);
      if (this.feeCap !== undefined && maxFeePerGas > this.feeCap) {
        throw new FeeCapError(`replacing ${previous.hash} would bid ${maxFeePerGas} wei per gas, above the cap of ${this.feeCap}`);
      }
      const tx = await this.sign({ to: previous.to, data: previous.data, gas: previous.gas }, previous.nonce, { maxFeePerGas, maxPriorityFeePerGas });
      await beforeBroadcast(tx);
      const receipt = await this.broadcast(tx);
      return receipt ? { ...tx, receipt } : tx;
    });
  }

  /** Forgets the cached nonce; the next send reads the pending nonce from the chain again. */
  resetNonce(): void {
    this.nextNonce = undefined;
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight += 1;
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run.finally(() => {
      this.inFlight -= 1;
    });
  }

  private async sendNow(call: ContractCall, beforeBroadcast: (tx: SignedTransaction) => Promise<void>): Promise<SignedTransaction> {
    const nonce = this.nextNonce ?? (await this.client.getTransactionCount({ address: this.address, blockTag: 'pending' }));
    const tx = await this.sign(call, nonce, await this.currentFees());
    await beforeBroadcast(tx);
    let receipt: TransactionReceipt | undefined;
    try {
      receipt = await this.broadcast(tx);
    } catch (error) {
      this.nextNonce = undefined;
      throw error;
    }
    this.nextNonce = nonce + 1;
    return receipt ? { ...tx, receipt } : tx;
  }

  /**
   * Sends the signed bytes; the receipt when the node answered with it. "already known" means the node holds this very
   * transaction (an earlier send whose answer was lost, or a fallback RPC sending it again): it was sent.
   */
  private async broadcast(tx: SignedTransaction): Promise<TransactionReceipt | undefined> {
    // A synchronous send holds the wallet until the block: only when no other send waits for it.
    if (this.pace.syncSend && this.pace.minesAtOnce === true && this.inFlight <= 1) {
      const started = performance.now();
      const answer = this.client.sendRawTransactionSync({ serializedTransaction: tx.raw, throwOnReceiptRevert: false });
      answer.catch(() => undefined); // once given up on (SyncSendWaitError), its answer is not waited for
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new SyncSendWaitError(tx.hash)), SYNC_SEND_WAIT_MS);
      });
      try {
        const receipt = await Promise.race([answer, waited]);
        this.pace.minesAtOnce = performance.now() - started <= SYNC_SEND_AT_ONCE_MS;
        return receipt;
      } catch (error) {
        if (error instanceof SyncSendWaitError) {
          this.pace.minesAtOnce = false;
          throw error;
        }
        const code = rpcErrorCode(error);
        if (code !== undefined && SYNC_SEND_PENDING_CODES.has(code)) {
          this.pace.minesAtOnce = false;
          return undefined;
        }
        // Nothing was sent: the node does not know the method. Every later broadcast is the plain send.
        if (code !== undefined && METHOD_UNKNOWN_CODES.has(code)) this.pace.syncSend = false;
        else if (isAlreadyKnown(error)) return undefined;
        else throw error;
      } finally {
        clearTimeout(timer);
      }
    }
    try {
      await this.client.sendRawTransaction({ serializedTransaction: tx.raw });
    } catch (error) {
      if (isAlreadyKnown(error)) return undefined;
      throw error;
    }
    return undefined;
  }

  private async sign(call: ContractCall, nonce: number, fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }): Promise<SignedTransaction> {
    const raw = signEip1559({ type: 'eip1559', chainId: this.chainId, nonce, to: call.to, data: call.data, gas: call.gas, ...fees }, this.privateKey);
    return { hash: keccak256(raw), nonce, signer: this.address, raw, to: call.to, data: call.data, gas: call.gas, ...fees };
  }

  /**
   * The fees this wallet would bid now: cached for a second; for up to FEE_STALE_MS the cached ones are bid while
   * fresh ones are read in the background, so a send does not wait for a fee read once a second.
   */
  async currentFees(fresh = false) {
    const age = this.fees ? Date.now() - this.fees.at : Infinity;
    if (!fresh && this.fees && age < FEE_CACHE_MS) return this.fees;
    if (!fresh && this.fees && age < FEE_STALE_MS) {
      this.feeRead ??= this.readFees().finally(() => (this.feeRead = undefined));
      this.feeRead.catch(() => undefined);
      return this.fees;
    }
    return this.readFees();
  }

  private async readFees() {
    const estimate = await this.client.estimateFeesPerGas();
    const cap = this.feeCap ?? estimate.maxFeePerGas;
    const maxFeePerGas = estimate.maxFeePerGas < cap ? estimate.maxFeePerGas : cap;
    const maxPriorityFeePerGas = estimate.maxPriorityFeePerGas < maxFeePerGas ? estimate.maxPriorityFeePerGas : maxFeePerGas;
    this.fees = { at: Date.now(), maxFeePerGas, maxPriorityFeePerGas };
    return this.fees;
  }
}

/**
 * Signs an EIP-1559 transaction with native libsecp256k1 (RFC 6979, low s): the same bytes as viem's
 * `signTransaction`, at a small fraction of the CPU of its pure-JS curve.
 */
export function signEip1559(transaction: TransactionSerializableEIP1559, privateKey: Uint8Array): Hex {
  const { signature, recid } = ecdsaSign(hexToBytes(keccak256(serializeTransaction(transaction))), privateKey);
  return serializeTransaction(transaction, { r: bytesToHex(signature.subarray(0, 32)), s: bytesToHex(signature.subarray(32, 64)), yParity: recid });
}

/** The node already has this exact transaction (geth: "already known"; anvil: "transaction already imported"). */
export function isAlreadyKnown(error: unknown): boolean {
  const text = error instanceof Error ? `${error.message} ${(error as { details?: string }).details ?? ''}` : String(error);
  return /already known|already imported|known transaction/i.test(text);
}

/** A replacement would have to bid above the configured fee ceiling: the transaction stays as it is. */
export class FeeCapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeeCapError';
  }
}

/** Several hot wallets on one network; each settlement goes to the least busy one. */
export class SignerPool {
  readonly signers: TransactionSigner[];
  readonly pace = new MiningPace();
  private cursor = 0;

  constructor(keys: Hex[], client: PublicClient, chainId: number, feeCap?: bigint) {
    this.signers = keys.map((key) => new TransactionSigner(key, client, chainId, feeCap, this.pace));
  }

  get addresses(): Address[] {
    return this.signers.map((s) => s.address);
  }

  /** The least busy wallet this process may send from, or undefined when it holds none right now. */
  pick(): TransactionSigner | undefined {
    const usable = this.signers.filter((s) => s.enabled);
    if (usable.length === 0) return undefined;
    let best = usable[this.cursor % usable.length];
    for (const signer of usable) if (signer.load < best.load) best = signer;
    this.cursor += 1;
    return best;
  }

  byAddress(address: string): TransactionSigner | undefined {
    return this.signers.find((s) => s.address.toLowerCase() === address.toLowerCase());
  }
}
