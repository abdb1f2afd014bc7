import { Inject, Injectable, Logger } from '@nestjs/common';
import { isRetryableTransactionError, isUniqueViolation } from '@mp/db';
import type { TransferInput, TransferResult } from '@mp/ledger';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { StaleReadError, TransferStore, type Submission } from './transfer.store';

interface Queued extends Submission {
  /** what the request writes to, as far as it names it: its accounts, and the pending transfers it resolves */
  keys: string[];
  resolve(results: TransferResult[]): void;
  reject(error: unknown): void;
}

const MAX_ATTEMPTS = 6;

/**
 * Coalesces concurrent create_transfers requests into shared write transactions, as TigerBeetle's client batches
 * concurrent calls: at most LEDGER_WRITE_CONCURRENCY transactions run at once, and whatever arrives meanwhile goes
 * into the next one (up to LEDGER_BATCH_MAX transfers). A request that names an account an unfinished transaction
 * of this process writes waits for it and joins the next batch, rather than waiting on the row lock in a
 * transaction of its own: a hot account is locked once per batch, not once per request, while requests on other
 * accounts still run in parallel. Each request keeps its own results and its own chains.
 *
 * A transaction that loses a race (deadlock, serialization failure, an id or resolution committed by another
 * transaction since it read) is retried whole; one that fails otherwise is split into its requests, so one
 * request's failure never fails the others.
 */
@Injectable()
export class TransferWriter {
  private readonly logger = new Logger(TransferWriter.name);
  private queue: Queued[] = [];
  private running = 0;
  /** keys of the running transactions, with how many use each */
  private readonly busy = new Map<string, number>();

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly store: TransferStore,
  ) {}

  submit(merchantId: string, transfers: TransferInput[]): Promise<TransferResult[]> {
    if (!transfers.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.queue.push({ merchantId, transfers, keys: keysOf(merchantId, transfers), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.config.writeConcurrency && this.queue.length) {
      const batch = this.takeBatch();
      if (!batch.length) return; // everything waiting touches a running transaction's accounts
      const keys = batch.flatMap((s) => s.keys);
      for (const key of keys) this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
      this.running++;
      void this.flush(batch).finally(() => {
        for (const key of keys) if (this.busy.set(key, this.busy.get(key)! - 1).get(key) === 0) this.busy.delete(key);
        this.running--;
        this.pump();
      });
    }
  }

  /** The waiting requests that touch no running transaction's accounts, in arrival order, up to the batch size. */
  private takeBatch(): Queued[] {
    const batch: Queued[] = [];
    const waiting: Queued[] = [];
    let size = 0;
    for (const s of this.queue) {
      const fits = batch.length === 0 || size + s.transfers.length <= this.config.batchMax;
      if (fits && !s.keys.some((k) => this.busy.has(k))) {
        batch.push(s);
        size += s.transfers.length;
      } else waiting.push(s);
    }
    this.queue = waiting;
    return batch;
  }

  private async flush(batch: Queued[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const results = await this.store.write(batch);
        batch.forEach((s, i) => s.resolve(results[i]));
        return;
      } catch (error) {
        if (attempt < MAX_ATTEMPTS && isRaceLost(error)) {
          await new Promise((r) => setTimeout(r, 2 ** attempt + Math.random() * 10));
          continue;
        }
        if (batch.length > 1) {
          this.logger.warn(`a write batch of ${batch.length} requests failed (${(error as Error).message}); writing them one by one`);
          for (const s of batch) await this.flush([s]);
          return;
        }
        batch[0].reject(error);
        return;
      }
    }
  }
}

function keysOf(merchantId: string, transfers: TransferInput[]): string[] {
  const keys = new Set<string>();
  for (const t of transfers) {
    for (const id of [t.debitAccountId, t.creditAccountId]) if (id) keys.add(`${merchantId}/${id}`);
    if (t.pendingId) keys.add(`${merchantId}/pending/${t.pendingId}`);
  }
  return [...keys];
}

function isRaceLost(error: unknown): boolean {
  return error instanceof StaleReadError || isRetryableTransactionError(error) || isUniqueViolation(error);
}
