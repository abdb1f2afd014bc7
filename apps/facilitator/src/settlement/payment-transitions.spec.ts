import fs from 'node:fs';
import path from 'node:path';
import type { SignedTransaction } from '@mp/chain';
import { PAYMENT_TRANSITIONS, transitionManyStatement, transitionStatement, type TransitionName } from './payment-transitions';

const id = '00000000-0000-4000-8000-000000000001';
const tx: SignedTransaction = {
  hash: '0x1111111111111111111111111111111111111111111111111111111111111111',
  nonce: 7,
  signer: '0xAbCdEf0000000000000000000000000000000001',
  raw: '0x02f8',
  to: '0x2222222222222222222222222222222222222222',
  data: '0xe3ee160e',
  gas: 90_000n,
  maxFeePerGas: 3_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
};
const signer = '0xabcdef0000000000000000000000000000000001';
const network = 'eip155:31337';
const stuckHash = '0x3333333333333333333333333333333333333333333333333333333333333333';
const blockHash = '0x4444444444444444444444444444444444444444444444444444444444444444';

const update = (set: string, from: string, guards = '') =>
  `UPDATE facilitator.payments SET ${set} WHERE id = $1::uuid AND state IN (${from})${guards} RETURNING id`;
const eventFrom = (source: string) =>
  `INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT id, $2, $3::jsonb FROM ${source} RETURNING payment_id AS id`;
const storeTransaction = (first: number) =>
  `stored AS (INSERT INTO facilitator.payment_transactions (payment_id, hash, network, signer, nonce, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, gas_limit) ` +
  `SELECT id, $${first}, $${first + 1}, $${first + 2}, $${first + 3}, $${first + 4}, $${first + 5}::numeric, $${first + 6}::numeric, $${first + 7}::numeric FROM updated RETURNING payment_id AS id)`;
const storedParams = [tx.hash, network, signer, 7, '0x02f8', '3000000000', '1000000000', '90000'];

describe('transitionStatement', () => {
  it('submit: the compare-and-set, the signed transaction and the event, numbered in the order declared', () => {
    const { sql, params } = transitionStatement('submit', id, { tx, network });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'submitted', updated_at = now(), tx_hash = $4, signer = $5, tx_nonce = $6, submitted_at = now(), attempts = attempts + 1, settle_gas = NULL`, `'verified'`)}), ` +
        `${storeTransaction(7)} ${eventFrom('stored')}`,
    );
    expect(params).toEqual([id, 'payment.submitted', JSON.stringify({ txHash: tx.hash, signer: tx.signer, txNonce: 7 }), tx.hash, signer, 7, ...storedParams]);
  });

  it('replace: a new hash on a submitted payment, with its transaction', () => {
    const { sql, params } = transitionStatement('replace', id, { tx, network, stuckHash });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'submitted', updated_at = now(), tx_hash = $4`, `'submitted'`)}), ${storeTransaction(5)} ${eventFrom('stored')}`,
    );
    expect(params).toEqual([
      id,
      'payment.replaced',
      JSON.stringify({ txHash: tx.hash, replaces: stuckHash, maxFeePerGas: '3000000000', maxPriorityFeePerGas: '1000000000' }),
      tx.hash,
      ...storedParams,
    ]);
  });

  it('resend: back to verified, forgetting the transaction', () => {
    const { sql, params } = transitionStatement('resend', id, { reason: 'nonce too low' });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'verified', updated_at = now(), tx_hash = NULL, signer = NULL, tx_nonce = NULL`, `'submitted'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.resend', JSON.stringify({ reason: 'nonce too low' })]);
  });

  it('leaveBatch: back to verified, detached from the batch transaction', () => {
    const { sql, params } = transitionStatement('leaveBatch', id, { batchHash: stuckHash });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'verified', updated_at = now(), tx_hash = NULL, signer = NULL, tx_nonce = NULL`, `'submitted'`)}), ` +
        `detached AS (DELETE FROM facilitator.payment_transactions WHERE payment_id IN (SELECT id FROM updated) AND hash = $4 RETURNING payment_id) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.resend', JSON.stringify({ reason: `its transfer failed inside batch ${stuckHash}` }), stuckHash]);
  });

  it('confirm: from submitted or verified, the block as NUMERIC', () => {
    const receipt = { blockNumber: 12n, blockHash, gasUsed: 50_000n, effectiveGasPrice: 2n };
    const { sql, params } = transitionStatement('confirm', id, { hash: tx.hash, receipt, gasFee: 100_000n });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'confirmed', updated_at = now(), settled_at = now(), tx_hash = $4, block_number = $5::numeric, block_hash = $6`, `'submitted', 'verified'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([
      id,
      'payment.confirmed',
      JSON.stringify({ txHash: tx.hash, blockNumber: '12', blockHash, gasUsed: '50000', effectiveGasPrice: '2', gasFee: '100000' }),
      tx.hash,
      '12',
      blockHash,
    ]);
  });

  it('reorg: only while the block it names is the one recorded', () => {
    const { sql, params } = transitionStatement('reorg', id, { blockHash, blockNumber: 12n });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'submitted', updated_at = now(), settled_at = NULL, block_number = NULL, block_hash = NULL`, `'confirmed'`, ' AND block_hash = $4')}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.reorged', JSON.stringify({ blockHash, blockNumber: '12' }), blockHash]);
  });

  it('failOnChain: keeps the hash as evidence', () => {
    const { sql, params } = transitionStatement('failOnChain', id, { hash: tx.hash, reason: 'reverted', message: 'the transfer reverted', gasFee: 5n });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'failed', updated_at = now(), tx_hash = $4, error_reason = $5, error_message = $6`, `'submitted'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([
      id,
      'payment.failed',
      JSON.stringify({ txHash: tx.hash, reason: 'reverted', message: 'the transfer reverted', gasFee: '5' }),
      tx.hash,
      'reverted',
      'the transfer reverted',
    ]);
  });

  it('failUnsent: from verified or submitted, forgetting the transaction', () => {
    const { sql, params } = transitionStatement('failUnsent', id, { reason: 'r', message: 'm' });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'failed', updated_at = now(), error_reason = $4, error_message = $5, tx_hash = NULL, signer = NULL, tx_nonce = NULL`, `'verified', 'submitted'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.failed', JSON.stringify({ reason: 'r', message: 'm', broadcast: false }), 'r', 'm']);
  });

  it('failUnsent decided on a record: only from its state, and only if no transaction was signed since', () => {
    const { sql, params } = transitionStatement('failUnsent', id, { reason: 'r', message: 'm', attempts: 0 }, ['verified']);
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'failed', updated_at = now(), error_reason = $4, error_message = $5, tx_hash = NULL, signer = NULL, tx_nonce = NULL`, `'verified'`, ' AND attempts = $6')}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.failed', JSON.stringify({ reason: 'r', message: 'm', broadcast: false }), 'r', 'm', 0]);
  });

  it('retry: only the failed row this request read, and only if nothing was sent', () => {
    const updatedAt = new Date('2026-12-01T00:00:00Z');
    const { sql, params } = transitionStatement('retry', id, { updatedAt, payloadHash: 'ab', call: { to: '0xABCD', data: '0x12' } });
    expect(sql).toBe(
      `WITH updated AS (${update(
        `state = 'verified', updated_at = now(), payload_hash = $4, settle_to = $5, settle_data = $6, settle_gas = NULL, error_reason = NULL, error_message = NULL, tx_hash = NULL`,
        `'failed'`,
        ' AND tx_hash IS NULL AND updated_at = $7',
      )}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.retried', JSON.stringify({ payloadHash: 'ab' }), 'ab', '0xabcd', '0x12', updatedAt]);
  });

  it('expire: from the states the caller names, which must be declared', () => {
    const { sql, params } = transitionStatement('expire', id, { message: 'too late' }, ['verified']);
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'expired', updated_at = now(), error_reason = $4, error_message = $5`, `'verified'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([
      id,
      'payment.expired',
      JSON.stringify({ message: 'too late' }),
      'invalid_exact_evm_payload_authorization_valid_before',
      'too late',
    ]);
    expect(() => transitionStatement('expire', id, { message: 'too late' }, ['submitted'])).toThrow('transition expire cannot leave submitted');
    expect(() => transitionStatement('expire', id, { message: 'too late' }, [])).toThrow('transition expire cannot leave no state');
  });

  it('failExternally: keeps a known reference when none is given', () => {
    const { sql, params } = transitionStatement('failExternally', id, { reason: 'card_declined', message: 'declined' });
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'failed', updated_at = now(), error_reason = $4, error_message = $5, reference = COALESCE($6, reference)`, `'verified'`)}) ${eventFrom('updated')}`,
    );
    expect(params).toEqual([id, 'payment.failed', JSON.stringify({ reason: 'card_declined', message: 'declined' }), 'card_declined', 'declined', null]);
    expect(transitionStatement('failExternally', id, { reason: 'card_declined', message: 'declined', reference: 'pi_1' }).params).toEqual([
      id,
      'payment.failed',
      JSON.stringify({ reason: 'card_declined', message: 'declined', reference: 'pi_1' }),
      'card_declined',
      'declined',
      'pi_1',
    ]);
  });

  it('confirmExternally: locks the row to learn the state it leaves, and marks a correction of a failure', () => {
    const { sql, params } = transitionStatement('confirmExternally', id, { reference: 'pi_1', details: { currency: 'usd' } });
    expect(sql).toBe(
      `WITH prior AS (SELECT id, state::text AS was FROM facilitator.payments WHERE id = $1::uuid AND state IN ('verified', 'failed') AND rail = $5 FOR UPDATE), ` +
        `updated AS (UPDATE facilitator.payments p SET state = 'confirmed', updated_at = now(), settled_at = now(), reference = $4, error_reason = NULL, error_message = NULL ` +
        `FROM prior WHERE p.id = prior.id AND p.state IN ('verified', 'failed') RETURNING p.id, prior.was), ` +
        `event AS (INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT id, $2, $3::jsonb || CASE was WHEN 'failed' THEN $6::jsonb ELSE '{}'::jsonb END FROM updated) ` +
        `SELECT id, was FROM updated`,
    );
    expect(params).toEqual([
      id,
      'payment.confirmed',
      JSON.stringify({ reference: 'pi_1', currency: 'usd' }),
      'pi_1',
      'stripe',
      JSON.stringify({ corrects: 'payment.failed' }),
    ]);
  });

  it('stores the trace context the event is written in, when there is one, as the last parameter', () => {
    const traceContext = JSON.stringify({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const { sql, params } = transitionStatement('failOnChain', id, { hash: tx.hash, reason: 'reverted', message: 'm', gasFee: 5n }, undefined, traceContext);
    expect(sql).toBe(
      `WITH updated AS (${update(`state = 'failed', updated_at = now(), tx_hash = $4, error_reason = $5, error_message = $6`, `'submitted'`)}) ` +
        `INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context) SELECT id, $2, $3::jsonb, $7::jsonb FROM updated RETURNING payment_id AS id`,
    );
    expect(params.at(-1)).toBe(traceContext);
    const correction = transitionStatement('confirmExternally', id, { reference: 'pi_1', details: {} }, undefined, traceContext);
    expect(correction.sql).toContain(
      `event AS (INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context) SELECT id, $2, $3::jsonb || CASE was WHEN 'failed' THEN $6::jsonb ELSE '{}'::jsonb END, $7::jsonb FROM updated)`,
    );
    expect(correction.params).toHaveLength(7);
    expect(correction.params.at(-1)).toBe(traceContext);
  });

  it('has a case above for every transition in the table', () => {
    const tested = [
      'submit',
      'replace',
      'resend',
      'leaveBatch',
      'confirm',
      'reorg',
      'failOnChain',
      'failUnsent',
      'retry',
      'expire',
      'failExternally',
      'confirmExternally',
    ];
    expect(Object.keys(PAYMENT_TRANSITIONS).sort()).toEqual(tested.sort());
  });
});

describe('transitionManyStatement', () => {
  const id2 = '00000000-0000-4000-8000-000000000002';
  const input = `input AS (SELECT payment_id, event_data FROM jsonb_to_recordset($1::jsonb) AS i(payment_id uuid, event_data jsonb))`;
  const receipt = { blockNumber: 12n, blockHash, gasUsed: 90_000n, effectiveGasPrice: 2n };

  it('confirm: one compare-and-set for every payment, each with its own event data (its gas share)', () => {
    const { sql, params } = transitionManyStatement('confirm', [
      { id, args: { hash: tx.hash, receipt, gasFee: 90_001n } },
      { id: id2, args: { hash: tx.hash, receipt, gasFee: 89_999n } },
    ]);
    expect(sql).toBe(
      `WITH ${input}, ` +
        `updated AS (UPDATE facilitator.payments SET state = 'confirmed', updated_at = now(), settled_at = now(), tx_hash = $3, block_number = $4::numeric, block_hash = $5 ` +
        `FROM input WHERE id = input.payment_id AND state IN ('submitted', 'verified') RETURNING id, input.event_data) ` +
        `INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT id, $2, event_data FROM updated RETURNING payment_id AS id`,
    );
    const data = (gasFee: string) => ({ txHash: tx.hash, blockNumber: '12', blockHash, gasUsed: '90000', effectiveGasPrice: '2', gasFee });
    expect(params).toEqual([
      JSON.stringify([
        { payment_id: id, event_data: data('90001') },
        { payment_id: id2, event_data: data('89999') },
      ]),
      'payment.confirmed',
      tx.hash,
      '12',
      blockHash,
    ]);
  });

  it('submit, all or none: locks the payments in id order, moves them only if every one can move, stores the transaction for each', () => {
    const { sql, params } = transitionManyStatement(
      'submit',
      [id, id2].map((i) => ({ id: i, args: { tx, network } })),
      { allOrNone: true },
    );
    expect(sql).toBe(
      `WITH ${input}, ` +
        `claimed AS MATERIALIZED (SELECT id FROM facilitator.payments WHERE id IN (SELECT payment_id FROM input) AND state IN ('verified') ORDER BY id FOR UPDATE), ` +
        `updated AS (UPDATE facilitator.payments SET state = 'submitted', updated_at = now(), tx_hash = $3, signer = $4, tx_nonce = $5, submitted_at = now(), attempts = attempts + 1, settle_gas = NULL ` +
        `FROM input WHERE id = input.payment_id AND state IN ('verified') AND (SELECT count(*) FROM claimed) = $6::int RETURNING id, input.event_data), ` +
        `stored AS (INSERT INTO facilitator.payment_transactions (payment_id, hash, network, signer, nonce, raw_tx, max_fee_per_gas, max_priority_fee_per_gas, gas_limit) ` +
        `SELECT id, $7, $8, $9, $10, $11, $12::numeric, $13::numeric, $14::numeric FROM updated RETURNING payment_id AS id) ` +
        `INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT id, $2, event_data FROM updated JOIN stored USING (id) RETURNING payment_id AS id`,
    );
    expect(params.slice(1)).toEqual(['payment.submitted', tx.hash, signer, 7, 2, ...storedParams]);
  });

  it('stores the trace context as the last parameter', () => {
    const traceContext = JSON.stringify({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const { sql, params } = transitionManyStatement('confirm', [{ id, args: { hash: tx.hash, receipt, gasFee: 1n } }], {}, traceContext);
    expect(sql).toContain(`INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context) SELECT id, $2, event_data, $6::jsonb FROM updated`);
    expect(params.at(-1)).toBe(traceContext);
  });

  it('refuses payments whose columns differ, a payment named twice, none, and transitions that are one payment at a time', () => {
    const other = { ...receipt, blockHash: stuckHash };
    expect(() =>
      transitionManyStatement('confirm', [
        { id, args: { hash: tx.hash, receipt, gasFee: 1n } },
        { id: id2, args: { hash: tx.hash, receipt: other, gasFee: 1n } },
      ]),
    ).toThrow('must write the same columns on each');
    expect(() =>
      transitionManyStatement(
        'resend',
        [id, id].map((i) => ({ id: i, args: { reason: 'r' } })),
      ),
    ).toThrow('names a payment twice');
    expect(() => transitionManyStatement('resend', [])).toThrow('of no payment');
    expect(() => transitionManyStatement('leaveBatch', [{ id, args: { batchHash: tx.hash } }])).toThrow('one payment at a time');
    expect(() => transitionManyStatement('confirmExternally', [{ id, args: { reference: 'pi_1', details: {} } }])).toThrow('one payment at a time');
  });
});

describe('PAYMENT_TRANSITIONS', () => {
  // The code that runs transitions names them as string literals: each one in the table is run from somewhere.
  const callers = ['chain-payments.repository.ts', '../stripe/stripe-payments.repository.ts']
    .map((file) => fs.readFileSync(path.join(__dirname, file), 'utf8'))
    .join('\n');
  const called = new Set([...callers.matchAll(/(?:this\.transition|applyTransition)\((?:this\.db, )?'(\w+)'/g)].map((m) => m[1]));

  it.each(Object.keys(PAYMENT_TRANSITIONS) as TransitionName[])('%s is run by a repository', (name) => {
    expect(called).toContain(name);
  });

  it('names only transitions the table declares', () => {
    expect([...called].filter((name) => !(name in PAYMENT_TRANSITIONS))).toEqual([]);
  });

  it('never lets a transition leave the state it enters, except a replacement that stays submitted', () => {
    const looping = Object.entries(PAYMENT_TRANSITIONS)
      .filter(([, t]) => (t.from as readonly string[]).includes(t.to))
      .map(([name]) => name);
    expect(looping).toEqual(['replace']);
  });
});
