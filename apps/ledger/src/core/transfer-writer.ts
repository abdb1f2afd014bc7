import { Inject, Injectable, Logger } from '@nestjs/common';
import { isRetryableTransactionError, isUniqueViolation } from '@mp/db';
import type { TransferInput, TransferResult } from '@mp/ledger';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { StaleReadError, TransferStore, type Submission } from './transfer.store';

interface Queued extends Submission {
  resolve(results: TransferResult[]): void;
  reject(error: unknown): void;
}

const MAX_ATTEMPTS = 6;

/**
 * Coalesces concurrent create_transfers requests into shared write transactions, as TigerBeetle's client batches
 * concurrent calls: at most LEDGER_WRITE_CONCURRENCY transactions run at once, and whatever arrives meanwhile goes
 * into the next one (up to LEDGER_BATCH_MAX transfers). A hot account is then locked once per batch rather than
 * once per request. Each request keeps its own results and its own chains.
 *
 * A transaction that loses a race (deadlock, serialization failure, an id or resolution committed by another
 * transaction since it read) is retried whole; one that fails otherwise is split into its requests, so one
 * request's failure never fails the others.
 */
@Injectable()
export class TransferWriter {
  private readonly logger = new Logger(TransferWriter.name);
  private readonly queue: Queued[] = [];
  private running = 0;

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly store: TransferStore,
  ) {}

  submit(merchantId: string, transfers: TransferInput[]): Promise<TransferResult[]> {
    if (!transfers.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.queue.push({ merchantId, transfers, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.config.writeConcurrency && this.queue.length) {
      const batch = this.takeBatch();
      this.running++;
      void this.flush(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private takeBatch(): Queued[] {
    const batch = [this.queue.shift()!];
    let size = batch[0].transfers.length;
    while (this.queue.length && size + this.queue[0].transfers.length <= this.config.batchMax) {
      size += this.queue[0].transfers.length;
      batch.push(this.queue.shift()!);
    }
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

function isRaceLost(error: unknown): boolean {
  return error instanceof StaleReadError || isRetryableTransactionError(error) || isUniqueViolation(error);
}
