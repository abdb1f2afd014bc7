import pg from 'pg';
import type { AssetInfo, LedgerEntry, Period } from '@mp/reconciliation';
import type { LedgerSource, MerchantAddress } from '../reconciliation.ports';

/**
 * For tests: a LedgerSource over tables of its own (schema `recon_test`) in the test database, written by the test
 * as the ledger would book: entries, correcting entries, receiving addresses and accepted assets per merchant.
 */
export class PgLedgerSource implements LedgerSource {
  private readonly pool: pg.Pool;

  constructor(databaseUrl: string) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  }

  /** Fresh tables: a scheduled run reconciles every merchant they list. */
  async install(): Promise<void> {
    await this.pool.query(`DROP SCHEMA IF EXISTS recon_test CASCADE`);
    await this.pool.query(`CREATE SCHEMA recon_test`);
    await this.pool.query(`CREATE TABLE recon_test.entries (
      id text PRIMARY KEY, merchant_id uuid NOT NULL, source text NOT NULL, asset text NOT NULL, reference text NOT NULL, kind text NOT NULL,
      amount numeric(78,0) NOT NULL, state text NOT NULL, occurred_at timestamptz NOT NULL, corrects text REFERENCES recon_test.entries (id))`);
    await this.pool.query(`CREATE TABLE recon_test.addresses (merchant_id uuid NOT NULL, network text NOT NULL, address text NOT NULL, PRIMARY KEY (merchant_id, network, address))`);
    await this.pool.query(`CREATE TABLE recon_test.assets (merchant_id uuid NOT NULL, asset text NOT NULL, symbol text NOT NULL, decimals int NOT NULL, PRIMARY KEY (merchant_id, asset))`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  async book(entry: LedgerEntry): Promise<void> {
    await this.pool.query(
      `INSERT INTO recon_test.entries (id, merchant_id, source, asset, reference, kind, amount, state, occurred_at, corrects) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [entry.id, entry.merchantId, entry.source, entry.asset, entry.reference, entry.kind, entry.amount.toString(), entry.state, entry.occurredAt, entry.corrects ?? null],
    );
  }

  async addAddress(merchantId: string, address: MerchantAddress): Promise<void> {
    await this.pool.query(`INSERT INTO recon_test.addresses VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [merchantId, address.network, address.address]);
  }

  async accept(merchantId: string, asset: AssetInfo): Promise<void> {
    await this.pool.query(`INSERT INTO recon_test.assets VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [merchantId, asset.asset, asset.symbol, asset.decimals]);
  }

  /** The period's entries and, whenever booked, every correction of them (and of those corrections). */
  async entries(merchantId: string, period: Period): Promise<LedgerEntry[]> {
    const { rows } = await this.pool.query(
      `WITH RECURSIVE picked AS (
         SELECT * FROM recon_test.entries WHERE merchant_id = $1 AND occurred_at >= $2 AND occurred_at < $3 AND corrects IS NULL
         UNION SELECT e.* FROM recon_test.entries e JOIN picked p ON e.corrects = p.id)
       SELECT id, merchant_id, source, asset, reference, kind, amount::text, state, occurred_at, corrects FROM picked`,
      [merchantId, period.from, period.to],
    );
    return rows.map((r) => ({
      id: r.id,
      merchantId: r.merchant_id,
      source: r.source,
      asset: r.asset,
      reference: r.reference,
      kind: r.kind,
      amount: BigInt(r.amount),
      state: r.state,
      occurredAt: r.occurred_at,
      ...(r.corrects && { corrects: r.corrects }),
    }));
  }

  async addresses(merchantId: string): Promise<MerchantAddress[]> {
    const { rows } = await this.pool.query(`SELECT network, address FROM recon_test.addresses WHERE merchant_id = $1`, [merchantId]);
    return rows;
  }

  async assets(merchantId: string): Promise<AssetInfo[]> {
    const { rows } = await this.pool.query(`SELECT asset, symbol, decimals FROM recon_test.assets WHERE merchant_id = $1 ORDER BY asset`, [merchantId]);
    return rows;
  }

  async merchants(): Promise<string[]> {
    const { rows } = await this.pool.query(`SELECT DISTINCT merchant_id FROM recon_test.addresses ORDER BY merchant_id`);
    return rows.map((r) => r.merchant_id);
  }
}
