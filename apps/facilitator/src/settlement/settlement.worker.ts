import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { encodeFunctionData, getAddress, isAddressEqual, type Hex, type TransactionReceipt } from 'viem';
import {
  batchGasLimit,
  FeeCapError,
  isAlreadyKnown,
  isDeliveryUncertain,
  isTransportFailure,
  MULTICALL3_ADDRESS,
  multicall3Abi,
  revertReason,
  settlementGasLimit,
  type TransactionSigner,
} from '@mp/chain';
import { closeWorker, crashPoint, FacilitatorMetrics, type WorkerOptionsFromConfig } from '@mp/platform';
import { UPTO_SCHEME, X402Reason } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import type { SettledTransfer } from '../eip3009/receipt-judgement';
import { TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../eip3009/transfer-authorization.rail';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { Permit2UptoRail, uptoSettleSender } from '../upto/permit2-upto.rail';
import { Clock } from '../x402/clock';
import { chainVerdict, isOurs, type ChainVerdict } from './chain-verdict';
import { gasShares } from './gas-share';
import { LocalSettlement, type SendingClaim } from './local-settlement';
import { ChainPayments, type NewPayment, type PaymentRecord, type SettlementRecord } from './chain-payments.repository';
import { PaymentTransactions } from './payment-transactions.repository';
import { recordedReason } from './recorded-reason';
import { SettlementEvents } from './settlement.events';
import { SETTLEMENT_JOB_OPTIONS, SETTLEMENT_QUEUE, SettlementQueue, type SettlementJobData, type SettlementJobName } from './settlement.queue';
import { freshClaimGas, sendGasEstimate } from './send-gas';

/** The node refused the send for its nonce: taken by a mined transaction (perhaps ours), or held by another in the mempool. */
const NONCE_TAKEN = /nonce too low|nonce has already been used|replacement transaction underpriced|nonce too high/i;
/** A settlement is not sent this close to its authorization's expiry: it could not be mined in time. */
const EXPIRY_MARGIN_SECONDS = 6n;
const NO_SIGNER_RETRY_MS = 250;
const TAKE_OVER_CONCURRENCY = 16;
/** Confirmed payments are watched for reorgs this many blocks deep at least. */
const REORG_WATCH_MIN_BLOCKS = 64;
const BALANCE_CHECK_MS = 60_000;
/** How long a batch's receipt is kept for its other payments once read (sharedReceipt). */
const RECEIPT_KEEP_MS = 3_000;
/** How long a batch job waits for its transaction's receipt before it hands its payments to `confirm` jobs. */
const BATCH_RECEIPT_WAIT_MS = 5_000;
/** How long shutdown waits for payments taken from /settle in this process (LocalSettlement) to finish their step. */
const LOCAL_RUN_GRACE_MS = 5_000;
/**
 * Pauses before reading a just-sent transaction's receipt again, unless the network's last receipt did not come within
 * them (it does not mine at once): anvil answers the send a moment before its block is sealed (measured: 2 % of first
 * reads found nothing, 26-37 % once RPC calls went over keep-alive node:http, nearly all found 1 ms later), and handing
 * such a payment to a `confirm` job cost its request 10-25 ms.
 */
const QUICK_RECEIPT_RETRY_MS = [1, 2, 4, 8];
/** A transaction pending longer than this has its nonce checked against the chain's on every `confirm`. */
const NONCE_CHECK_AFTER_MS = 1_000;

class ClaimLostError extends Error {}

/** A payment handed over unclaimed (claimAndSendLocal): claimed when its transaction is recorded. */
interface UnclaimedSend {
  payment: NewPayment & { id: string };
  /** Resolves the request's wait for the claim; only its first call counts. */
  decide(outcome: SendingClaim): void;
  /** Tells the request it joined a batch window (LocalRunner.claimAndSend's `inWindow`). */
  inWindow(): void;
  outcome: 'claimed' | 'lost' | undefined;
}

/** A payment /settle handed to this process's worker: its record, whether it is alone, and its claim if not made yet. */
interface LocalSubmit {
  record: SettlementRecord;
  alone: boolean;
  claim?: UnclaimedSend;
}

interface BatchEntry {
  record: SettlementRecord;
  /** The raw estimate of its own call; the batch adds the margin once, over the sum. */
  gas: bigint;
  /** Not claimed yet (claimAndSendLocal): claimed by the batch's record of its transaction, with the others. */
  claim?: UnclaimedSend;
  /**
   * The batch transaction once it is recorded (and broadcast), `confirmed` when its receipt has already confirmed this
   * payment; undefined: send this payment alone.
   */
  resolve(sent: { hash: Hex; confirmed: boolean } | undefined): void;
}

/**
 * Sends and follows settlements. `submit` signs with a leased hot wallet, records the transaction before the
 * broadcast and hands over to `confirm`, which follows every transaction of the payment until one is mined:
 * it rebroadcasts the very same bytes if the node lost them (a crash between record and broadcast), replaces a
 * transaction stuck in the mempool with higher fees, and puts the payment back to be sent again if its nonce
 * went to another transaction. A recovery sweep re-enqueues whatever a crashed worker left behind.
 */
// A stall is a crash to recover from, not a poison job: it never fails the job. autorun off: the worker starts taking
// jobs in onModuleInit, after the providers it uses are initialised, together with the take-over.
@Processor(SETTLEMENT_QUEUE, { autorun: false, maxStalledCount: Number.MAX_SAFE_INTEGER })
export class SettlementWorker extends WorkerHost implements WorkerOptionsFromConfig, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(SettlementWorker.name);
  private sweepTimer: NodeJS.Timeout | undefined;
  private balanceTimer: NodeJS.Timeout | undefined;
  private watchingReorgs = false;
  /** Payments waiting, per network, to share one Multicall3 transaction. */
  private readonly batches = new Map<string, { entries: BatchEntry[]; timer: NodeJS.Timeout }>();
  /** Receipt reads in flight or just answered, by network and hash (sharedReceipt). */
  private readonly receiptsInFlight = new Map<string, Promise<TransactionReceipt | undefined>>();
  /** Payments taken from /settle in this process (runLocal), by id, until their submit step ends. */
  private readonly localRuns = new Map<string, Promise<void>>();
  private closing = false;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly upto: Permit2UptoRail,
    private readonly payments: ChainPayments,
    private readonly transactions: PaymentTransactions,
    private readonly queue: SettlementQueue,
    private readonly events: SettlementEvents,
    private readonly clock: Clock,
    private readonly metrics: FacilitatorMetrics,
    private readonly local: LocalSettlement,
  ) {
    super();
  }

  /** Read by QueueModule when it creates the worker (SETTLE_WORKER_CONCURRENCY, SETTLE_JOB_LOCK_MS). */
  workerOptions() {
    return {
      concurrency: this.config.workerConcurrency,
      // A dead worker's jobs are taken over once their lock lapses: short locks (renewed at half) make that seconds.
      lockDuration: this.config.jobLockMs,
      stalledInterval: Math.max(500, Math.floor(this.config.jobLockMs / 2)),
    };
  }

  onModuleInit(): void {
    this.worker.run().catch((error: Error) => this.logger.error(`the settlement worker stopped: ${error.message}`));
    void this.takeOver();
    this.sweepTimer = setInterval(() => void this.sweep(this.config.recoveryIntervalMs).then(() => this.watchReorgs()), this.config.recoveryIntervalMs);
    this.sweepTimer.unref();
    void this.checkBalances();
    this.balanceTimer = setInterval(() => void this.checkBalances(), BALANCE_CHECK_MS);
    this.balanceTimer.unref();
    this.local.attach({
      run: (record, alone) => this.runLocal(record, alone),
      claimAndSend: (payment, record, alone, inWindow) => this.claimAndSendLocal(payment, record, alone, inWindow),
    });
  }

  /**
   * Before the database closes (onModuleDestroy of a global module, after this one): the worker takes no more jobs and
   * running ones get the platform's grace period; never hangs on an unreachable Redis (the records make them resumable).
   */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    this.local.detach();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.balanceTimer) clearInterval(this.balanceTimer);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise((resolve) => (timer = setTimeout(resolve, LOCAL_RUN_GRACE_MS).unref()));
    await Promise.race([Promise.allSettled([...this.localRuns.values()]), grace]).finally(() => clearTimeout(timer));
    await closeWorker(this.worker);
  }

  /**
   * Sends a payment /settle has just claimed in this process, from the record the claim wrote (LocalSettlement), as a
   * `submit` job would, without its trip through Redis. Declined (false: the caller enqueues it) while shutting down,
   * with SETTLE_WORKER_CONCURRENCY such runs already going, or while the queue's Redis is down: a run hands its
   * retries and its confirmation to the queue, and /settle answers 503 when the queue is unavailable, as before.
   * Whatever stops a run part-way (an error, a crash) leaves the payment as a lost job would: `verified` or `submitted`
   * in PostgreSQL, where the recovery sweep and the take-over find it. `alone`: no other /settle is on its way to a
   * claim in this process, so none could join a batch window: with no batch open, it is sent at once.
   */
  private runLocal(record: SettlementRecord, alone: boolean): boolean {
    if (!this.takesLocal()) return false;
    this.startLocal({ record, alone });
    return true;
  }

  /**
   * LocalRunner.claimAndSend: a payment this worker would send without reading it back (what submit would check first
   * holds, and its estimate is fresh) goes through submit unclaimed, whose record of the signed transaction claims it:
   * alone (ChainPayments.claimSubmitted), or with the others of its batch window (claimSubmittedMany).
   */
  private claimAndSendLocal(
    payment: NewPayment & { id: string },
    record: SettlementRecord,
    alone: boolean,
    inWindow: () => void,
  ): Promise<SendingClaim> | undefined {
    if (payment.paymentIdentifier || !this.takesLocal()) return undefined;
    const network = this.networkOf(record);
    if (!network || this.nearExpiry(record) || freshClaimGas(record, Date.now()) === undefined || !this.senderFor(record, network)) return undefined;
    let decide!: (outcome: SendingClaim) => void;
    const decided = new Promise<SendingClaim>((resolve) => (decide = resolve));
    const claim: UnclaimedSend = { payment, decide, inWindow, outcome: undefined };
    // Whatever ends the run before its claim was decided (a send that failed before signing) wrote nothing: unsent.
    void this.startLocal({ record, alone, claim }).finally(() => decide('unsent'));
    return decided;
  }

  /** Whether this process's worker takes a payment from /settle now (not closing, a slot free, the queue to fall back on). */
  private takesLocal(): boolean {
    return !this.closing && this.localRuns.size < this.config.workerConcurrency && this.queue.ready();
  }

  private startLocal(claimed: LocalSubmit): Promise<void> {
    const { record } = claimed;
    const run = this.submit(record.id, (ms) => this.queue.submitLater(record.id, ms), claimed).catch(async (error: unknown) => {
      if (claimed.claim && claimed.claim.outcome !== 'claimed') return; // nothing written: the request claims it itself
      // As a failed job attempt is retried: through the queue now, which backs off (or the sweep, if Redis is away).
      this.logger.debug(`submit of ${record.id} in this process failed, handed to the queue: ${(error as Error).message}`);
      await this.queue.submitLater(record.id, SETTLEMENT_JOB_OPTIONS.backoff.delay).catch(() => undefined);
    });
    this.localRuns.set(record.id, run);
    void run.finally(() => this.localRuns.delete(record.id));
    return run;
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<SettlementJobData, void, SettlementJobName> | undefined, error: Error): void {
    const payments = job && ('paymentIds' in job.data ? `of ${job.data.paymentIds.length} payments from ${job.data.paymentIds[0]}` : job.data.paymentId);
    this.logger.warn(`${job?.name} ${payments} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<SettlementJobData, void, SettlementJobName>, token?: string): Promise<void> {
    if ('paymentIds' in job.data) return this.submitBatch(job.data.paymentIds);
    const { paymentId } = job.data;
    const retryLater = async (ms: number) => {
      await job.moveToDelayed(Date.now() + ms, token);
      throw new DelayedError();
    };
    // A payment this process is sending already (runLocal; the recovery sweep may enqueue it meanwhile) is left to that
    // run, which hands it to the queue itself if it fails: two submits of one payment here would share a batch.
    if (job.name === 'submit') return this.localRuns.has(paymentId) ? undefined : this.submit(paymentId, retryLater);
    return this.confirm(paymentId, retryLater);
  }

  /**
   * `claimed`: the record as its claim just wrote it, and whether it is alone (runLocal), or as its claim will write it
   * with the signed transaction (`claim`: claimAndSendLocal); read from the database otherwise.
   */
  private async submit(paymentId: string, retryLater: (ms: number) => Promise<void>, claimed?: LocalSubmit): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const record = attempt === 1 && claimed ? claimed.record : await this.payments.findForSettlement(paymentId);
      if (!record || record.state !== 'verified') return;
      // Unclaimed, only the first attempt may claim it (claimAndSendLocal checked it would get to the send).
      const claim = attempt === 1 ? claimed?.claim : undefined;
      const network = this.networkOf(record);
      if (!network) {
        if (await this.fail(record, recordedReason('network_not_served'), `network ${record.network} is no longer configured`)) return;
        continue;
      }
      if (this.nearExpiry(record)) {
        // Sent before: an earlier transaction may have carried it before the authorization ran out.
        const outcome = record.attempts > 0 ? await this.settleFromChain(record, network) : 'open';
        if (outcome === 'recorded') return;
        if (outcome === 'unknown') return retryLater(network.config.pollingIntervalMs * 4);
        if (await this.payments.markExpired(paymentId, ['verified'], 'the authorization expired before the settlement could be sent'))
          this.events.changed(paymentId);
        return;
      }
      const signer = this.senderFor(record, network);
      if (!signer) return retryLater(NO_SIGNER_RETRY_MS);

      let gas: bigint;
      try {
        gas = await sendGasEstimate(record, Date.now(), () =>
          network.client.estimateGas({ account: signer.address, to: record.settleTo, data: record.settleData }),
        );
      } catch (error) {
        if (isTransportFailure(error)) throw error;
        const failure = this.sendFailure(record, error, 'estimate');
        if (failure.ours) {
          // Our wallet cannot pay the gas: not the payer's failure. Retry later, perhaps from another wallet.
          this.logger.error(`hot wallet ${signer.address} on ${record.network} cannot send: ${revertReason(error)}`);
          throw error;
        }
        // Sent before: the simulation may revert because our own earlier transaction used the authorization.
        if (record.attempts > 0) {
          const outcome = await this.settleFromChain(record, network);
          if (outcome === 'unknown') return retryLater(network.config.pollingIntervalMs * 4);
          if (outcome === 'recorded') return;
        }
        // The refusal stands only for the record it was decided on: another worker (a redelivered job, a replica's
        // take-over) may have signed a transaction since, whose use of the authorization is why this simulation reverts.
        if (await this.fail(record, failure.reason, revertReason(error) ?? 'the transfer would revert')) return;
        continue;
      }

      if (this.waitsForBatch(record, network, attempt === 1 && claimed?.alone === true)) {
        const batch = await this.joinBatch(network, record, gas, claim);
        if (batch?.confirmed) return;
        if (batch) return this.afterSend(record, network, batch.hash);
        // Claimed with a batch the node then refused: back to verified, read again. Unclaimed: claimed alone below.
        if (claim?.outcome === 'claimed') continue;
        if (!claim) {
          const current = await this.payments.findForSettlement(paymentId);
          if (!current || current.state !== 'verified') return;
        }
      }

      let hash: Hex | undefined;
      let receipt: TransactionReceipt | undefined;
      try {
        ({ receipt } = await signer.send({ to: record.settleTo, data: record.settleData, gas: settlementGasLimit(gas) }, async (tx) => {
          if (claim) {
            claim.outcome = (await this.payments.claimSubmitted(claim.payment, tx, record.network)) ? 'claimed' : 'lost';
            claim.decide(claim.outcome);
            if (claim.outcome === 'lost') throw new ClaimLostError();
          } else if (!(await this.payments.recordSubmitted(paymentId, tx, record.network))) throw new ClaimLostError();
          hash = tx.hash;
          crashPoint('settlement.recorded');
        }));
        crashPoint('settlement.broadcast');
      } catch (error) {
        if (error instanceof ClaimLostError) return;
        if (!hash) throw error; // nothing recorded, nothing sent: the job runs again
        if (!isDeliveryUncertain(error)) {
          // A definite refusal of this send; yet an earlier send of ours (whose answer was lost) may have carried it.
          const message = revertReason(error) ?? String(error);
          const submitted = { ...record, state: 'submitted' as const, attempts: record.attempts + 1 };
          const outcome = await this.settleFromChain(submitted, network);
          if (outcome === 'recorded') return;
          if (outcome === 'unknown') return this.queue.confirm(paymentId, network.config.pollingIntervalMs);
          if (NONCE_TAKEN.test(message) && attempt < 3 && (await this.payments.releaseUnsent(paymentId, message))) continue;
          if (await this.fail(submitted, this.sendFailure(record, error, 'send').reason, message)) return;
          continue;
        }
        // The broadcast died on the way; the node may have it. `confirm` finds out and rebroadcasts if not.
      }
      return this.afterSend(record, network, hash!, receipt);
    }
  }

  /** Not sent this close to its authorization's expiry: it could not be mined in time. */
  private nearExpiry(record: SettlementRecord): boolean {
    return record.validBefore <= this.clock.nowSeconds() + EXPIRY_MARGIN_SECONDS;
  }

  /**
   * Whether the payment waits for a batch window (SETTLE_BATCH_MAX above 1), unless it is alone (no other /settle on
   * its way here, no batch open): nothing would join its window. An upto settlement must come from its permit's
   * facilitator itself: Multicall3 would be the proxy's msg.sender.
   */
  private waitsForBatch(record: SettlementRecord, network: Network, alone: boolean): boolean {
    if (alone && !this.batches.has(network.config.network)) return false;
    return this.config.batchMax > 1 && record.scheme !== UPTO_SCHEME && !isAddressEqual(record.settleTo, MULTICALL3_ADDRESS);
  }

  /** `answered`: the receipt the node answered the broadcast with (eth_sendRawTransactionSync), if it did. */
  private async afterSend(record: SettlementRecord, network: Network, hash: Hex, answered?: TransactionReceipt): Promise<void> {
    // On a chain that mines at once (or a fast L2) the receipt is often already there: record it without a job, and the
    // waiting request hears of the outcome alone. A payment sent before may have been carried by an earlier transaction:
    // look at all of them, oldest first.
    const hashes = record.attempts > 0 ? (await this.transactions.transactions(record.id)).map((t) => t.hash) : [hash];
    const submitted = { ...record, state: 'submitted' as const, attempts: record.attempts + 1 };
    try {
      for (const candidate of hashes) {
        const receipt = candidate === hash ? await this.sentReceipt(network, hash, answered) : await this.receipt(network, candidate);
        if (receipt && (await this.recordReceipt(submitted, network, candidate, receipt))) return;
      }
    } catch (error) {
      this.logger.debug(`receipt of ${hash} not read yet: ${(error as Error).message}`);
    }
    this.events.changed(record.id, { ...paymentRecordOf(record), state: 'submitted', txHash: hash, updatedAt: new Date() });
    await this.queue.confirm(record.id);
  }

  /**
   * The receipt of a transaction just sent: the one its broadcast was answered with (`answered`), or read at once and
   * again after each of QUICK_RECEIPT_RETRY_MS, unless the network's last one did not come within them (MiningPace):
   * there a receipt not there at once is left to `confirm`.
   */
  private async sentReceipt(network: Network, hash: Hex, answered?: TransactionReceipt): Promise<TransactionReceipt | undefined> {
    if (answered) {
      this.keepReceipt(network, hash, answered);
      return this.receipt(network, hash);
    }
    const { pace } = network.signers;
    let receipt = await this.receipt(network, hash);
    for (const pause of pace.minesAtOnce === false ? [] : QUICK_RECEIPT_RETRY_MS) {
      if (receipt) break;
      await new Promise((resolve) => setTimeout(resolve, pause));
      receipt = await this.receipt(network, hash);
    }
    pace.minesAtOnce = receipt !== undefined;
    return receipt;
  }

  /** Waits for the payment's batch to be sent; undefined means it goes alone (a batch of one, or the batch failed). */
  private joinBatch(
    network: Network,
    record: SettlementRecord,
    gas: bigint,
    claim: UnclaimedSend | undefined,
  ): Promise<{ hash: Hex; confirmed: boolean } | undefined> {
    return new Promise((resolve) => {
      const key = network.config.network;
      let batch = this.batches.get(key);
      if (!batch) {
        batch = { entries: [], timer: setTimeout(() => void this.sendBatch(key, network), this.config.batchWindowMs) };
        this.batches.set(key, batch);
      }
      batch.entries.push({ record, gas, claim, resolve });
      claim?.inWindow();
      if (batch.entries.length >= this.config.batchMax) {
        clearTimeout(batch.timer);
        void this.sendBatch(key, network);
      }
    });
  }

  /**
   * Sends the payments that joined a batch in this process (joinBatch) together; each alone if that is not possible.
   * The claimed and the unclaimed go in separate transactions: one statement records either kind (the claimed moved to
   * submitted, the unclaimed inserted so), all or none, before the broadcast.
   */
  private async sendBatch(key: string, network: Network): Promise<void> {
    const batch = this.batches.get(key);
    if (!batch) return;
    this.batches.delete(key);
    const groups = [batch.entries.filter((e) => e.claim), batch.entries.filter((e) => !e.claim)];
    await Promise.all(
      groups.map(async (entries) => {
        const signer = entries.length > 1 ? network.signers.pick() : undefined;
        const sent = signer ? await this.sendMulticall(network, signer, entries) : undefined;
        const records = entries.map((e) => e.record);
        const confirmed = sent?.delivered
          ? await this.confirmCarried(network, sent.hash, records).catch((error: unknown) => {
              this.logger.debug(`batch ${sent.hash} not confirmed at once: ${(error as Error).message}`);
              return new Set<string>();
            })
          : new Set<string>();
        entries.forEach((e) => e.resolve(sent && { hash: sent.hash, confirmed: confirmed.has(e.record.id) }));
      }),
    );
  }

  /**
   * A batch's receipt, when it is there at once (sentReceipt), confirms every payment it carried in one statement, each
   * with its share of the fee among the payments the batch was recorded for (gasShares, as recordCarried's): the ids
   * this confirmed. The others (not carried, no receipt yet) are followed one by one (afterSend).
   */
  private async confirmCarried(network: Network, hash: Hex, records: readonly SettlementRecord[]): Promise<Set<string>> {
    const receipt = await this.sentReceipt(network, hash);
    const carried = receipt ? records.filter((r) => this.carries(r, receipt)) : [];
    if (!receipt || carried.length === 0) return new Set();
    const shares = gasShares(
      receipt.gasUsed * receipt.effectiveGasPrice,
      records.map((r) => r.id),
    );
    // Passed once per payment, as each payment's own confirmation (recordCarried) passes it.
    for (let i = 0; i < carried.length; i++) crashPoint('receipt.read');
    const confirmed = await this.payments.markConfirmedMany(hash, receipt, new Map(carried.map((r) => [r.id, shares.get(r.id)!])));
    for (const record of carried.filter((r) => confirmed.has(r.id))) {
      this.metrics.addGasSpent(record.network, shares.get(record.id)!);
      this.events.changed(record.id, { ...paymentRecordOf(record), state: 'confirmed', txHash: hash, updatedAt: new Date() });
    }
    return confirmed;
  }

  /**
   * One Multicall3 `aggregate3` transaction carrying the payments' transfers, each with allowFailure, so one bad
   * authorization cannot fail the others. Recorded for every payment before the broadcast (all of them, or none if
   * another worker took one meanwhile, or, unclaimed, another request claimed one). Its hash once broadcast, or perhaps
   * broadcast (`delivered` false: the send died on the way, and `confirm` finds out); undefined when nothing went out
   * (or the node refused it, and every payment was put back to verified): each payment is then to be sent alone.
   * `entries` are all claimed, or all unclaimed (`claim`).
   */
  private async sendMulticall(
    network: Network,
    signer: TransactionSigner,
    entries: readonly { record: SettlementRecord; gas: bigint; claim?: UnclaimedSend }[],
  ): Promise<{ hash: Hex; delivered: boolean } | undefined> {
    const data = encodeFunctionData({
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [entries.map((e) => ({ target: e.record.settleTo, allowFailure: true, callData: e.record.settleData }))],
    });
    const gas = batchGasLimit(entries.map((e) => e.gas));
    let hash: Hex | undefined;
    try {
      const { receipt } = await signer.send({ to: MULTICALL3_ADDRESS, data, gas }, async (tx) => {
        const claims = entries.flatMap((e) => (e.claim ? [e.claim] : []));
        const recorded =
          claims.length > 0
            ? await this.payments.claimSubmittedMany(
                claims.map((c) => c.payment),
                tx,
                network.config.network,
              )
            : await this.payments.recordSubmittedBatch(
                entries.map((e) => e.record.id),
                tx,
                network.config.network,
              );
        if (!recorded) throw new ClaimLostError();
        for (const claim of claims) {
          claim.outcome = 'claimed';
          claim.decide('claimed');
        }
        hash = tx.hash;
        crashPoint('batch.recorded');
      });
      crashPoint('batch.broadcast');
      if (receipt) this.keepReceipt(network, hash!, receipt);
      return { hash: hash!, delivered: true };
    } catch (error) {
      if (hash && isDeliveryUncertain(error)) return { hash, delivered: false };
      if (hash) {
        const message = revertReason(error) ?? String(error);
        for (const e of entries) await this.payments.releaseUnsent(e.record.id, `batch ${hash} refused: ${message}`);
      }
      return undefined;
    }
  }

  /**
   * Payments recorded together (subscription renewals, SettlementQueue.submitBatch) sent as one Multicall3 transaction
   * per network and confirmed from its receipt in one statement: a handful of round trips for the whole batch, where a
   * `submit` job per payment costs several each. Anything unusual goes to the per-payment jobs, which know every rare
   * case: a payment sent before or close to its expiry, a network without a signer here right now, a transfer whose
   * aged estimate no longer simulates, a broadcast refused or perhaps lost, a transfer that failed inside the batch, a
   * receipt slow to come.
   * Idempotent: a redelivered job leaves payments that are no longer verified alone, except the submitted ones, which
   * it hands to `confirm` (it may have crashed after their broadcast).
   */
  private async submitBatch(paymentIds: readonly string[]): Promise<void> {
    const records = await this.payments.findManyForSettlement(paymentIds);
    const alone: string[] = [];
    const submitted: string[] = [];
    const batches = new Map<string, { network: Network; signer: TransactionSigner; entries: { record: SettlementRecord; gas: bigint }[] }>();
    const aged = new Map<string, SettlementRecord[]>();
    const now = Date.now();
    for (const record of records) {
      if (record.state === 'submitted') submitted.push(record.id);
      if (record.state !== 'verified') continue;
      const network = this.networkOf(record);
      const key = network?.config.network;
      const signer = key === undefined ? undefined : (batches.get(key)?.signer ?? network!.signers.pick());
      if (
        !network ||
        !signer ||
        record.attempts > 0 ||
        record.validBefore <= this.clock.nowSeconds() + EXPIRY_MARGIN_SECONDS ||
        isAddressEqual(record.settleTo, MULTICALL3_ADDRESS) ||
        record.scheme === UPTO_SCHEME
      ) {
        alone.push(record.id);
        continue;
      }
      const batch = batches.get(network.config.network) ?? { network, signer, entries: [] };
      batches.set(network.config.network, batch);
      const gas = freshClaimGas(record, now);
      if (gas !== undefined) batch.entries.push({ record, gas });
      else aged.set(network.config.network, [...(aged.get(network.config.network) ?? []), record]);
    }
    // Claims whose estimates have aged (a deep queue): simulated again together, in one round trip, not one by one.
    for (const [key, stale] of aged) {
      const gas = await this.rail.estimateEach(
        key,
        stale.map((r) => ({ to: r.settleTo, data: r.settleData })),
      );
      stale.forEach((record, k) => (gas[k] === undefined ? alone.push(record.id) : batches.get(key)!.entries.push({ record, gas: gas[k] })));
    }
    for (const [key, { entries }] of batches) {
      if (entries.length > 1) continue;
      alone.push(...entries.map((e) => e.record.id));
      batches.delete(key);
    }
    await this.queue.submitMany(alone);
    await this.queue.confirmMany(submitted);
    await Promise.all([...batches.values()].map(({ network, signer, entries }) => this.sendAndConfirm(network, signer, entries)));
  }

  /** One batch of submitBatch on its network: sent, then confirmed from its receipt, or handed to the per-payment jobs. */
  private async sendAndConfirm(network: Network, signer: TransactionSigner, entries: readonly { record: SettlementRecord; gas: bigint }[]): Promise<void> {
    const ids = entries.map((e) => e.record.id);
    const sent = await this.sendMulticall(network, signer, entries);
    if (!sent) return this.queue.submitMany(ids);
    ids.forEach((id) => this.events.changed(id));
    const receipt = sent.delivered ? await this.awaitReceipt(network, sent.hash) : undefined;
    if (!receipt || receipt.status !== 'success') return this.queue.confirmMany(ids, receipt ? 0 : network.config.pollingIntervalMs);
    // Every transfer is judged against the one receipt object, whose logs are decoded once (judgeSettlementReceipt).
    const carried = new Set(entries.filter((e) => this.carries(e.record, receipt)).map((e) => e.record.id));
    const fees = gasShares(receipt.gasUsed * receipt.effectiveGasPrice, [...carried]);
    crashPoint('receipt.read');
    // A compare-and-set per payment: another worker may have recorded some of them (and counted their gas) already.
    const confirmed = carried.size > 0 ? await this.payments.markConfirmedMany(sent.hash, receipt, fees) : new Set<string>();
    for (const id of confirmed) {
      this.metrics.addGasSpent(network.config.network, fees.get(id)!);
      this.events.changed(id);
    }
    // A transfer that failed inside the batch: `confirm` detaches it and sends it alone, which names its reason.
    await this.queue.confirmMany(ids.filter((id) => !carried.has(id)));
  }

  /**
   * The batch transaction's receipt, polled for a few seconds (a chain that mines at once, or a fast L2, has it by
   * then); undefined past that, or on a network that waits for more than one confirmation: `confirm` follows it.
   */
  private async awaitReceipt(network: Network, hash: Hex): Promise<TransactionReceipt | undefined> {
    if (network.config.confirmations > 1) return undefined;
    const deadline = Date.now() + BATCH_RECEIPT_WAIT_MS;
    for (;;) {
      const receipt = await this.receipt(network, hash).catch((error: unknown) => {
        this.logger.debug(`receipt of ${hash} not read yet: ${(error as Error).message}`);
        return undefined;
      });
      if (receipt || Date.now() + network.config.pollingIntervalMs > deadline) return receipt;
      await new Promise((resolve) => setTimeout(resolve, network.config.pollingIntervalMs));
    }
  }

  private async confirm(paymentId: string, retryLater: (ms: number) => Promise<void>): Promise<void> {
    const record = await this.payments.findForSettlement(paymentId);
    if (!record || record.state !== 'submitted') return;
    const network = this.networkOf(record);
    if (!network) return;
    const transactions = await this.transactions.transactions(paymentId);
    for (const tx of transactions) {
      const receipt = await this.receipt(network, tx.hash);
      if (receipt && (await this.recordReceipt(record, network, tx.hash, receipt))) return;
    }
    const latest = transactions.at(-1);
    if (!latest) {
      if (await this.payments.releaseUnsent(paymentId, 'submitted without a recorded transaction')) await this.queue.submit(paymentId);
      return;
    }
    const known = await this.findTransaction(network, latest.hash);
    if (!known) {
      // The node does not have it: never broadcast (we crashed after recording it) or dropped. Send the same bytes.
      try {
        await network.client.sendRawTransaction({ serializedTransaction: latest.raw });
        this.logger.log(`rebroadcast ${latest.hash} for payment ${paymentId}`);
      } catch (error) {
        const message = revertReason(error) ?? String(error);
        if (!isDeliveryUncertain(error) && /nonce too low|nonce has already been used/i.test(message)) {
          if (await this.sendAgainIfNonceTaken(record, network, latest)) return;
        } else if (!isAlreadyKnown(error)) this.logger.warn(`rebroadcast of ${latest.hash} failed: ${message}`);
      }
    } else if (known.blockNumber === null) {
      const age = Date.now() - latest.createdAt.getTime();
      // A node may go on showing a pending transaction whose nonce a mined one has taken (anvil did, under load, and
      // held the wallet's later transactions behind it): it will never be mined, so it is not waited for.
      if (age > NONCE_CHECK_AFTER_MS) {
        const minedNonce = await network.client.getTransactionCount({ address: getAddress(latest.signer), blockTag: 'latest' });
        if (minedNonce > latest.nonce && (await this.sendAgainIfNonceTaken(record, network, latest))) return;
      }
      if (age > this.config.stuckTxAfterMs && record.validBefore > this.clock.nowSeconds() + EXPIRY_MARGIN_SECONDS) {
        // Still in the mempool (a mined one only waits for its confirmations): replace it with higher fees.
        await this.replace(network, record, latest);
      }
    }
    return retryLater(network.config.pollingIntervalMs);
  }

  /**
   * The nonce of the payment's latest transaction was used by a mined transaction: ours (this node may lag behind the
   * one that answered), or another, and then ours never will be. True when that is settled: the outcome the chain
   * holds is recorded, or the payment is back in line to be sent anew (its wallet reads its nonce again).
   */
  private async sendAgainIfNonceTaken(record: SettlementRecord, network: Network, latest: { signer: string; nonce: number }): Promise<boolean> {
    const outcome = await this.settleFromChain(record, network);
    if (outcome === 'recorded') return true;
    if (outcome === 'unknown') return false;
    network.signers.byAddress(latest.signer)?.resetNonce();
    if (await this.payments.releaseUnsent(record.id, `nonce ${latest.nonce} of ${latest.signer} went to another transaction`)) {
      this.events.changed(record.id);
      await this.queue.submit(record.id);
    }
    return true;
  }

  private async replace(network: Network, record: SettlementRecord, stuck: Parameters<TransactionSigner['replace']>[0]): Promise<void> {
    const signer = network.signers.byAddress(stuck.signer);
    if (!signer?.enabled) return; // only the lease holder may touch this wallet's nonces
    try {
      const replacement = await signer.replace(stuck, async (tx) => {
        if (!(await this.payments.recordReplacement(stuck.hash, tx, record.network))) throw new ClaimLostError();
        crashPoint('replacement.recorded');
      });
      this.logger.warn(`replaced stuck ${stuck.hash} with ${replacement.hash} (max fee ${replacement.maxFeePerGas})`);
    } catch (error) {
      if (error instanceof FeeCapError) this.logger.debug(error.message);
      else if (!(error instanceof ClaimLostError)) this.logger.warn(`replacing ${stuck.hash} failed: ${revertReason(error)}`);
    }
  }

  /**
   * Records what a mined transaction of the payment did. A transaction that did not carry the transfer is final only
   * once the chain shows none of the payment's other transactions did: false means not decided yet (ask again later).
   */
  private async recordReceipt(record: SettlementRecord, network: Network, hash: Hex, receipt: TransactionReceipt): Promise<boolean> {
    if (this.carries(record, receipt)) return this.recordCarried(record, hash, receipt);
    const verdict = await this.judge(record, network, { hash, receipt });
    if (verdict.kind === 'carried') return this.recordCarried(record, verdict.hash, verdict.receipt);
    if (verdict.kind === 'unknown') return false;
    const batched = receipt.to !== null && isAddressEqual(receipt.to, MULTICALL3_ADDRESS) && !isAddressEqual(record.settleTo, MULTICALL3_ADDRESS);
    if (verdict.kind === 'open' && batched && receipt.status === 'success') {
      // Its own call failed inside a batch that succeeded: its authorization is unused. Send it alone, which names the reason.
      if (await this.payments.releaseFromBatch(record.id, hash)) await this.queue.submit(record.id);
      return true;
    }
    const judged = this.judgeReceipt(record, receipt);
    const reason = judged.success ? this.transactionFailedReason(record) : judged.reason;
    const message =
      verdict.kind === 'taken'
        ? `${verdict.message}; ${hash} did not carry it`
        : judged.success
          ? `transaction ${hash} did not carry the transfer`
          : judged.message;
    const gasFee = await this.gasFeeOf(record, hash, receipt, batched);
    if (await this.payments.markFailedOnChain(record.id, hash, reason, message, gasFee)) {
      this.metrics.addGasSpent(record.network, gasFee);
      this.events.changed(record.id);
    }
    return true;
  }

  private async recordCarried(record: SettlementRecord, hash: Hex, receipt: TransactionReceipt): Promise<boolean> {
    const batched = receipt.to !== null && isAddressEqual(receipt.to, MULTICALL3_ADDRESS) && !isAddressEqual(record.settleTo, MULTICALL3_ADDRESS);
    const gasFee = await this.gasFeeOf(record, hash, receipt, batched);
    crashPoint('receipt.read');
    // A compare-and-set: another worker may have recorded it (and counted its gas) already.
    if (await this.payments.markConfirmed(record.id, hash, receipt, gasFee)) {
      this.metrics.addGasSpent(record.network, gasFee);
      this.events.changed(record.id, { ...paymentRecordOf(record), state: 'confirmed', txHash: hash, updatedAt: new Date() });
    }
    return true;
  }

  private gasFeeOf(record: SettlementRecord, hash: Hex, receipt: TransactionReceipt, batched: boolean): Promise<bigint> {
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    return batched ? this.transactions.gasShare(hash, record.id, fee) : Promise.resolve(fee);
  }

  private carries(record: SettlementRecord, receipt: TransactionReceipt): boolean {
    return this.judgeReceipt(record, receipt).success;
  }

  /** Whether a mined transaction carried the payment, by its scheme's judgement, with the recorded reason if not. */
  private judgeReceipt(record: SettlementRecord, receipt: TransactionReceipt): { success: true } | { success: false; reason: string; message: string } {
    if (record.scheme === UPTO_SCHEME) return this.upto.judgeReceipt(record, receipt);
    const judged = this.rail.judgeReceipt(settledTransferOf(record), receipt);
    return judged.success ? judged : { success: false, reason: recordedReason(judged.fault), message: judged.message };
  }

  private transactionFailedReason(record: SettlementRecord): string {
    return record.scheme === UPTO_SCHEME ? X402Reason.uptoEvmTransactionFailed : recordedReason('transaction_failed');
  }

  /**
   * The wallet to send the payment from: any leased signer, except for upto, whose permit names the one facilitator
   * the proxy accepts as sender (undefined while this worker does not hold that signer's lease: retried later).
   */
  private senderFor(record: SettlementRecord, network: Network): TransactionSigner | undefined {
    if (record.scheme !== UPTO_SCHEME) return network.signers.pick();
    const sender = uptoSettleSender(record.settleData);
    const signer = sender && network.signers.byAddress(sender);
    return signer && signer.enabled ? signer : undefined;
  }

  /**
   * The recorded reason behind an error from estimating (`estimate`) or sending a settlement; `ours`: our wallet cannot
   * pay the gas, which is never the payer's failure.
   */
  private sendFailure(record: SettlementRecord, error: unknown, phase: 'estimate' | 'send'): { reason: string; ours: boolean } {
    if (record.scheme === UPTO_SCHEME) return this.upto.sendFailure(error);
    const fault = this.rail.sendFault(error);
    return {
      reason: recordedReason(phase === 'estimate' && fault === 'transaction_failed' ? 'simulation_failed' : fault),
      ours: fault === 'facilitator_unable',
    };
  }

  /**
   * Asks the chain about every transaction of the payment, oldest first (`known`: one whose receipt was just read),
   * then, unless one of them carried it, about the authorization itself. See ChainVerdict.
   */
  private async judge(record: SettlementRecord, network: Network, known?: { hash: Hex; receipt: TransactionReceipt }): Promise<ChainVerdict> {
    const transfer = settledTransferOf(record);
    const ours: { hash: Hex; receipt: TransactionReceipt | undefined }[] = [];
    for (const tx of await this.transactions.transactions(record.id)) {
      const receipt = tx.hash === known?.hash ? known.receipt : await this.receipt(network, tx.hash);
      ours.push({ hash: tx.hash, receipt });
      if (receipt && this.carries(record, receipt)) return chainVerdict({ transfer, ours, carries: (r) => this.carries(record, r) });
    }
    const upto = record.scheme === UPTO_SCHEME;
    const carries = (receipt: TransactionReceipt) => this.carries(record, receipt);
    // Permit2 logs no event for a spent nonce: for upto, whether it is spent, never by which transaction.
    const use = upto
      ? (await this.upto.nonceUsed(network.config.network, getAddress(record.payer), BigInt(record.authorizationNonce)))
        ? ({ used: true, canceled: false, transaction: undefined } as const)
        : ({ used: false } as const)
      : await this.rail.authorizationUse(network.config.network, transfer);
    if (use.used && !use.canceled && use.transaction && !isOurs(ours, use.transaction)) {
      const sender = (await this.findTransaction(network, use.transaction))?.from;
      if (!sender)
        return { kind: 'unknown', message: `authorization ${transfer.authorization.nonce} was used by ${use.transaction}, which this node does not show yet` };
      // Sent by one of our wallets though not on the payment's record (another worker signed it after the record was
      // read, or its record was lost): the chain decides, so it is judged as ours.
      if (network.signers.addresses.some((address) => isAddressEqual(address, sender))) ours.push({ hash: use.transaction, receipt: undefined });
    }
    const ourUse = use.used && !use.canceled && use.transaction && isOurs(ours, use.transaction) ? use.transaction : undefined;
    return chainVerdict({ transfer, ours, use, useReceipt: ourUse && (await this.receipt(network, ourUse)), carries });
  }

  /** The transaction as the node shows it, or undefined when it does not (never sent, dropped, or not seen yet). */
  private findTransaction(network: Network, hash: Hex) {
    return network.client.getTransaction({ hash }).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'TransactionNotFoundError') return undefined;
      throw error;
    });
  }

  /**
   * Before a payment that had transactions is failed, expired or sent again: records the outcome the chain already
   * holds ('recorded'), or says the authorization is still open, or that the chain cannot tell yet ('unknown').
   */
  private async settleFromChain(record: SettlementRecord, network: Network): Promise<'recorded' | 'open' | 'unknown'> {
    const verdict = await this.judge(record, network);
    if (verdict.kind === 'carried') {
      await this.recordCarried(record, verdict.hash, verdict.receipt);
      return 'recorded';
    }
    if (verdict.kind === 'taken') {
      const reason = record.scheme === UPTO_SCHEME ? X402Reason.permit2InvalidNonce : recordedReason('nonce_used');
      if (await this.payments.markFailedUnsent(record.id, reason, verdict.message)) this.events.changed(record.id);
      return 'recorded';
    }
    if (verdict.kind === 'unknown') this.logger.warn(`payment ${record.id}: ${verdict.message}`);
    return verdict.kind;
  }

  /**
   * Fails the payment unsent, but only as the record the failure was decided on still stands: false when a transaction
   * was signed for it (or its state changed) meanwhile, and the caller must read the record again.
   */
  private async fail(record: SettlementRecord, reason: string, message: string): Promise<boolean> {
    const failed = await this.payments.markFailedUnsent(record.id, reason, message, record);
    if (failed) this.events.changed(record.id);
    return failed;
  }

  /** The transaction's receipt once its block has the network's confirmations on top (itself included), else undefined. */
  private async receipt(network: Network, hash: Hex): Promise<TransactionReceipt | undefined> {
    const receipt = await this.sharedReceipt(network, hash);
    if (!receipt || network.config.confirmations <= 1) return receipt;
    const head = await network.client.getBlockNumber({ cacheTime: 0 });
    return head - receipt.blockNumber + 1n >= BigInt(network.config.confirmations) ? receipt : undefined;
  }

  /**
   * The transaction's receipt, one read shared by everyone who asks while it is in flight or within RECEIPT_KEEP_MS of
   * its answer: every payment of a batch asks for the same receipt, within moments of each other, and reading (and
   * decoding) all its logs once per payment made a batch cost n². Only a found receipt is kept, and briefly: a later ask
   * reads the chain again, and a reorg meanwhile is the reorg watcher's (it compares confirmed payments' blocks).
   */
  private sharedReceipt(network: Network, hash: Hex): Promise<TransactionReceipt | undefined> {
    const key = `${network.config.network}:${hash}`;
    const shared = this.receiptsInFlight.get(key);
    if (shared) return shared;
    const forget = () => this.receiptsInFlight.delete(key);
    const receipt = network.client.getTransactionReceipt({ hash }).then(
      (found) => {
        setTimeout(forget, RECEIPT_KEEP_MS).unref();
        return found;
      },
      (error: unknown) => {
        forget();
        if (error instanceof Error && error.name === 'TransactionReceiptNotFoundError') return undefined;
        throw error;
      },
    );
    this.receiptsInFlight.set(key, receipt);
    return receipt;
  }
  /** A receipt the node gave otherwise (with the broadcast), shared as a read would be (sharedReceipt). */
  private keepReceipt(network: Network, hash: Hex, receipt: TransactionReceipt): void {
    const key = `${network.config.network}:${hash}`;
    this.receiptsInFlight.set(key, Promise.resolve(receipt));
    setTimeout(() => this.receiptsInFlight.delete(key), RECEIPT_KEEP_MS).unref();
  }

  /**
   * Takes back the confirmations a reorg undid: every payment confirmed in the last max(64, 4 × confirmations)
   * blocks whose block is no longer the chain's block at that height goes back to submitted (payment.reorged) and is
   * confirmed again, by its transaction mined anew (rebroadcast if the node dropped it) or judged otherwise.
   */
  private async watchReorgs(): Promise<void> {
    if (this.watchingReorgs) return;
    this.watchingReorgs = true;
    try {
      for (const network of this.networks.all()) await this.watchReorgsOn(network);
    } finally {
      this.watchingReorgs = false;
    }
  }

  private async watchReorgsOn(network: Network): Promise<void> {
    try {
      const head = await network.client.getBlockNumber({ cacheTime: 0 });
      const depth = BigInt(Math.max(REORG_WATCH_MIN_BLOCKS, 4 * network.config.confirmations));
      const recent = await this.payments.confirmedAfter(network.config.network, head > depth ? head - depth : -1n);
      const canonical = new Map<bigint, string | undefined>();
      for (const payment of recent) {
        if (!canonical.has(payment.blockNumber)) {
          const block = await network.client.getBlock({ blockNumber: payment.blockNumber }).catch((error: unknown) => {
            if (error instanceof Error && error.name === 'BlockNotFoundError') return undefined;
            throw error;
          });
          canonical.set(payment.blockNumber, block?.hash ?? undefined);
        }
        if (canonical.get(payment.blockNumber)?.toLowerCase() === payment.blockHash.toLowerCase()) continue;
        this.receiptsInFlight.clear(); // a receipt kept from the lost block must not confirm it again
        if (await this.payments.markReorged(payment.id, payment.blockHash, payment.blockNumber)) {
          this.logger.warn(`payment ${payment.id}: block ${payment.blockNumber} (${payment.blockHash}) left the chain; judging it again`);
          this.events.changed(payment.id);
          await this.queue.requeue('confirm', payment.id);
        }
      }
    } catch (error) {
      this.logger.debug(`reorg watch on ${network.config.network} skipped: ${(error as Error).message}`);
    }
  }

  private networkOf(record: SettlementRecord): Network | undefined {
    return this.networks.resolve(record.network, 2);
  }

  /** Warns about hot wallets this worker sends from whose gas money runs low (the balance is a metric too). */
  private async checkBalances(): Promise<void> {
    for (const network of this.networks.all()) {
      for (const signer of network.signers.signers.filter((s) => s.enabled)) {
        const balance = await network.client.getBalance({ address: signer.address }).catch(() => undefined);
        if (balance !== undefined && balance < this.config.signerMinBalanceWei) {
          this.logger.warn(
            `hot wallet ${signer.address} on ${network.config.network} has ${balance} wei, below SIGNER_MIN_BALANCE_WEI (${this.config.signerMinBalanceWei}); top it up`,
          );
        }
      }
    }
  }

  /**
   * At boot: a crashed predecessor's payments are confirmed or sent at once, without waiting for its job locks to lapse
   * (every step is a compare-and-set, safe beside any other worker); everything in flight is enqueued again too.
   */
  private async takeOver(): Promise<void> {
    try {
      const inFlight = await this.payments.stale(['verified', 'submitted'], 0);
      for (let i = 0; i < inFlight.length; i += TAKE_OVER_CONCURRENCY) {
        await Promise.all(
          inFlight.slice(i, i + TAKE_OVER_CONCURRENCY).map(({ id, state }) => {
            const run = state === 'submitted' ? this.confirm(id, (ms) => this.queue.confirm(id, ms)) : this.submit(id, () => this.queue.submit(id));
            return run.catch((error: unknown) => this.logger.debug(`take-over of ${id}: ${(error as Error).message}`));
          }),
        );
      }
    } catch (error) {
      this.logger.debug(`take-over skipped: ${(error as Error).message}`);
    }
    await this.sweep(0);
  }

  /** Re-enqueues what a crashed worker, a lost job or a Redis outage left behind. Jobs are idempotent. */
  private async sweep(olderThanMs: number): Promise<void> {
    try {
      for (const { id, state } of await this.payments.stale(['verified', 'submitted'], olderThanMs)) {
        await this.queue.requeue(state === 'verified' ? 'submit' : 'confirm', id);
      }
    } catch (error) {
      this.logger.debug(`recovery sweep skipped: ${(error as Error).message}`);
    }
  }
}

/** The PaymentRecord part of a worker's record (what a waiting /settle answers from). */
function paymentRecordOf(record: SettlementRecord): PaymentRecord {
  const { id, state, payloadHash, txHash, signer, errorReason, errorMessage, updatedAt, merchantId } = record;
  return { id, state, payloadHash, txHash, signer, errorReason, errorMessage, updatedAt, merchantId };
}

/** The transfer a payment's authorization allows, as its record holds it. */
function settledTransferOf(record: SettlementRecord): SettledTransfer {
  return {
    asset: { address: getAddress(record.asset) },
    authorization: { from: getAddress(record.payer), to: getAddress(record.payTo), value: record.amount, nonce: record.authorizationNonce },
  };
}
