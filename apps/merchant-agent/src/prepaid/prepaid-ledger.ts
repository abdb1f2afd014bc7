import { fetchWithTimeout } from '../facilitator-fetch';
import type { PrepaidConfig } from '../merchant.config';

/** A payer's balance as the ledger shows it (GET /balances/{payer}): atomic units as decimal strings. */
export interface BalanceView {
  payer: string;
  asset: string;
  available: string;
  held: string;
  deposited: string;
  spent: string;
}

/** The ledger refused for want of funds (402): how much more the payer needs. */
export interface Shortfall {
  available: string;
  required: string;
  topUpNeeded: string;
}

/** Thrown when the ledger cannot answer (unreachable, refused our key, failed): never taken for "no balance". */
export class PrepaidLedgerError extends Error {
  constructor(detail: string) {
    super(`the ledger did not answer the balance operation: ${detail}`);
    this.name = 'PrepaidLedgerError';
  }
}

/**
 * The merchant's side of the ledger's prepaid balances (apps/ledger balances/): every call names its own id, so
 * asking again after a lost answer is safe and gets the same outcome.
 */
export class PrepaidLedger {
  private readonly fetch: typeof fetch;

  constructor(
    readonly config: PrepaidConfig,
    timeoutMs: number,
  ) {
    this.fetch = fetchWithTimeout(timeoutMs);
  }

  /** Credits a settled payment (its transaction) to the payer; once per payment. */
  async topUp(payer: string, amount: string, paymentReference: string): Promise<BalanceView> {
    const answer = await this.call('POST', '/balances/top-ups', { payer, asset: this.config.ledgerAsset, amount, paymentReference });
    if (answer.status !== 200 && answer.status !== 201) throw new PrepaidLedgerError(`top-up answered ${answer.status} ${detailOf(answer.body)}`);
    return answer.body as BalanceView;
  }

  /** Reserves `amount` under `id`; a shortfall when the balance is short. */
  async hold(id: string, payer: string, amount: string, timeoutSeconds: number): Promise<{ held: true; balance: BalanceView } | ({ held: false } & Shortfall)> {
    const answer = await this.call('POST', '/balances/holds', { id, payer, asset: this.config.ledgerAsset, amount, timeoutSeconds });
    if (answer.status === 402) {
      const { available, required, topUpNeeded } = answer.body as Shortfall;
      return { held: false, available, required, topUpNeeded };
    }
    if (answer.status !== 200 && answer.status !== 201) throw new PrepaidLedgerError(`hold answered ${answer.status} ${detailOf(answer.body)}`);
    return { held: true, balance: answer.body as BalanceView };
  }

  /** Spends `amount` of hold `id` and releases the rest. */
  async capture(id: string, amount: string): Promise<void> {
    const answer = await this.call('POST', `/balances/holds/${encodeURIComponent(id)}/capture`, { amount });
    if (answer.status !== 200 && answer.status !== 201) throw new PrepaidLedgerError(`capture answered ${answer.status} ${detailOf(answer.body)}`);
  }

  /** Returns hold `id` to the balance; a hold already gone (released, lapsed) is fine. */
  async release(id: string): Promise<void> {
    const answer = await this.call('POST', `/balances/holds/${encodeURIComponent(id)}/release`);
    if (answer.status !== 200 && answer.status !== 201 && answer.status !== 404 && answer.status !== 409)
      throw new PrepaidLedgerError(`release answered ${answer.status} ${detailOf(answer.body)}`);
  }

  async balance(payer: string): Promise<BalanceView> {
    const answer = await this.call('GET', `/balances/${encodeURIComponent(payer)}?asset=${encodeURIComponent(this.config.ledgerAsset)}`);
    if (answer.status !== 200) throw new PrepaidLedgerError(`balance answered ${answer.status} ${detailOf(answer.body)}`);
    return answer.body as BalanceView;
  }

  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    let response: Response;
    try {
      response = await this.fetch(`${this.config.ledgerUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.config.apiKey}`,
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new PrepaidLedgerError(`no answer (${(error as Error).message})`);
    }
    return { status: response.status, body: await response.json().catch(() => undefined) };
  }
}

function detailOf(body: unknown): string {
  const detail = (body as { detail?: unknown } | undefined)?.detail;
  return typeof detail === 'string' ? `(${detail})` : '';
}
