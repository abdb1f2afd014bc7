import { randomUUID } from 'node:crypto';
import { testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';
const USDC = 'eip155:8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

describe('ledger API: accounts, transfers, pagination, statements, bad input', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  const post = (path: string, body: unknown) => call(`${ledger.url}${path}`, { key: merchant.apiKey, body });
  const get = (path: string) => call(`${ledger.url}${path}`, { key: merchant.apiKey });
  const results = async (path: string, body: unknown) => {
    const answer = await post(path, body);
    expect(answer.status).toBe(200);
    return answer.body.results.map((r: any) => r.result);
  };
  const account = (extra: Record<string, unknown> = {}) => ({ id: randomUUID(), asset: USD, code: 1, ...extra });
  const transfer = (dr: string, cr: string, amount: string, extra: Record<string, unknown> = {}) => ({
    id: randomUUID(),
    debitAccountId: dr,
    creditAccountId: cr,
    amount,
    asset: USD,
    code: 1,
    ...extra,
  });

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url, LEDGER_BATCH_MAX: '100' });
    merchant = createMerchant('Ledger API merchant');
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  it('creates accounts and reads them with pending, posted and available balances', async () => {
    const wallet = account({ flags: ['debits_must_not_exceed_credits'], reference: 'customer:42' });
    const world = account({ normalBalance: 'debit' });
    const answer = await post('/accounts', [wallet, world, { ...wallet, code: 2 }]);
    expect(answer.body.results).toEqual([
      { index: 0, id: wallet.id, result: 'created', message: 'the account was created' },
      { index: 1, id: world.id, result: 'created', message: 'the account was created' },
      { index: 2, id: wallet.id, result: 'exists_with_different_code', message: 'an account with this id already exists with a different code' },
    ]);
    expect(await results('/transfers', [transfer(world.id, wallet.id, '1000'), transfer(wallet.id, world.id, '300', { flags: ['pending'] })])).toEqual([
      'created',
      'created',
    ]);
    expect((await get(`/accounts/${wallet.id}`)).body).toEqual({
      id: wallet.id,
      asset: USD,
      code: 1,
      flags: ['debits_must_not_exceed_credits'],
      normalBalance: 'credit',
      reference: 'customer:42',
      createdAt: expect.any(String),
      debitsPending: '300',
      debitsPosted: '0',
      creditsPending: '0',
      creditsPosted: '1000',
      balances: { posted: '1000', pending: '700', available: '700' },
    });
    // debit-normal: debits raise it, so the pending credit is what may still go out
    expect((await get(`/accounts/${world.id}`)).body.balances).toEqual({ posted: '1000', pending: '700', available: '700' });
    expect((await post('/accounts', [{ ...wallet, asset: USDC }])).body.results[0].result).toBe('exists_with_different_ledger');
  });

  it('answers every transfer of a batch with 200 and its TigerBeetle result; only the failed chain is rolled back', async () => {
    const [world, wallet, shop, euro] = [account(), account({ flags: ['debits_must_not_exceed_credits'] }), account(), account({ asset: 'stripe/eur' })];
    expect(await results('/accounts', [world, wallet, shop, euro])).toEqual(['created', 'created', 'created', 'created']);
    const fund = transfer(world.id, wallet.id, '100');
    const batch = [
      fund,
      fund,
      { ...fund, amount: '101' },
      transfer(wallet.id, shop.id, '0'),
      transfer(wallet.id, euro.id, '1'),
      transfer(wallet.id, shop.id, '1000'),
      transfer(wallet.id, shop.id, '60', { flags: ['linked'] }),
      transfer(wallet.id, shop.id, '60'),
      transfer(wallet.id, shop.id, '40'),
      transfer(wallet.id, randomUUID(), '1'),
    ];
    const answer = await post('/transfers', batch);
    expect(answer.status).toBe(200);
    expect(answer.body.results.map((r: any) => [r.index, r.result])).toEqual([
      [0, 'created'],
      [1, 'exists'],
      [2, 'exists_with_different_amount'],
      [3, 'amount_must_not_be_zero'],
      [4, 'accounts_must_have_the_same_ledger'],
      [5, 'exceeds_credits'],
      [6, 'linked_event_failed'],
      [7, 'exceeds_credits'],
      [8, 'created'],
      [9, 'credit_account_not_found'],
    ]);
    expect(answer.body.results[5].message).toMatch(/debits_must_not_exceed_credits/);
    expect(answer.body.results[1].timestamp).toBe(answer.body.results[0].timestamp);
    expect((await get(`/accounts/${wallet.id}`)).body).toMatchObject({ debitsPosted: '40', creditsPosted: '100' });
    expect((await get(`/transfers/${batch[6].id}`)).status).toBe(404);
    // a transfer that failed on a balance stays failed; a new id is needed
    const again = (await post('/transfers', [batch[5]])).body.results[0];
    expect(again).toMatchObject({ result: 'id_already_failed', firstResult: 'exceeds_credits' });
  });

  it('posts and voids pending transfers, and shows what became of each', async () => {
    const [a, b] = [account(), account()];
    await post('/accounts', [a, b]);
    const [hold, hold2] = [transfer(a.id, b.id, '50', { flags: ['pending'], timeout: 3600 }), transfer(a.id, b.id, '20', { flags: ['pending'] })];
    const postIt = { id: randomUUID(), pendingId: hold.id, amount: '35', flags: ['post_pending_transfer'] };
    const voidIt = { id: randomUUID(), pendingId: hold2.id, flags: ['void_pending_transfer'] };
    expect(await results('/transfers', [hold, hold2, postIt, voidIt])).toEqual(['created', 'created', 'created', 'created']);
    expect(
      await results('/transfers', [
        { ...postIt, id: randomUUID() },
        { ...postIt, amount: '36' },
      ]),
    ).toEqual(['pending_transfer_already_posted', 'exists_with_different_amount']);
    expect((await get(`/transfers/${hold.id}`)).body).toMatchObject({
      status: 'posted',
      amount: '50',
      flags: ['pending'],
      timeout: 3600,
      expiresAt: expect.any(String),
    });
    expect((await get(`/transfers/${postIt.id}`)).body).toMatchObject({
      status: 'posted',
      amount: '35',
      pendingId: hold.id,
      debitAccountId: a.id,
      creditAccountId: b.id,
      asset: USD,
    });
    expect((await get(`/transfers/${hold2.id}`)).body.status).toBe('voided');
    expect((await get(`/accounts/${b.id}`)).body).toMatchObject({ creditsPending: '0', creditsPosted: '35' });
    expect((await get(`/transfers?account=${a.id}&status=posted`)).body.data.map((t: any) => t.id).sort()).toEqual([hold.id, postIt.id].sort());
    expect((await get(`/transfers?account=${a.id}&status=voided`)).body.data.map((t: any) => t.id).sort()).toEqual([hold2.id, voidIt.id].sort());
  });

  it('refuses malformed requests with 400 naming the field, and applies nothing of them', async () => {
    const [a, b] = [account(), account()];
    await post('/accounts', [a, b]);
    const good = transfer(a.id, b.id, '5');
    const cases: [unknown, string][] = [
      [{ id: good.id }, '(body)'],
      [[], '(body)'],
      [[good, { ...transfer(a.id, b.id, '-5') }], '[1].amount'],
      [[good, { ...transfer(a.id, b.id, '1.5') }], '[1].amount'],
      [[good, { ...transfer(a.id, b.id, '5'), amount: 5 }], '[1].amount'],
      [[good, { ...transfer(a.id, b.id, '5'), id: 'nope' }], '[1].id'],
      [[good, { ...transfer(a.id, b.id, '5'), flags: ['pendingg'] }], '[1].flags[0]'],
      [[good, { ...transfer(a.id, b.id, '5'), colour: 'red' }], '[1].colour'],
      [[good, { ...transfer(a.id, b.id, '5'), asset: 'USD' }], '[1].asset'],
      [[good, { ...transfer(a.id, b.id, '5'), code: 70_000 }], '[1].code'],
      [Array.from({ length: 101 }, () => good), '(body)'],
    ];
    for (const [body, field] of cases) {
      const answer = await post('/transfers', body);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: 'validation_failed', status: 400 });
      expect(answer.body.invalidParams.map((p: any) => p.name)).toContain(field);
    }
    const negative = await post('/transfers', [transfer(a.id, b.id, '-5')]);
    expect(negative.body.invalidParams[0].reason).toMatch(/must not be negative.*swap debitAccountId and creditAccountId/);
    const malformed = await post('/transfers', '[{"id": ');
    expect(malformed.body).toMatchObject({ status: 400, code: 'malformed_json' });
    expect((await get(`/transfers/${good.id}`)).status).toBe(404);
    expect((await get('/transfers/not-an-id')).status).toBe(400);
    expect((await get('/transfers?cursor=garbage')).body.invalidParams).toEqual([{ name: 'cursor', reason: 'is not a cursor this API returned' }]);
    expect((await get('/transfers?colour=red')).body.invalidParams).toEqual([{ name: 'colour', reason: 'unknown query parameter' }]);
    expect((await get('/transfers?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z')).status).toBe(400);
  });

  it('accepts ids as decimal 128-bit integers and answers them as UUIDs', async () => {
    const id = (BigInt(Date.now()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1e6))).toString();
    const hex = BigInt(id).toString(16).padStart(32, '0');
    const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    expect((await post('/accounts', [{ id, asset: USD, code: 1 }])).body.results[0]).toMatchObject({ id: uuid, result: 'created' });
    expect((await get(`/accounts/${id}`)).body.id).toBe(uuid);
    expect((await post('/accounts', [{ id: '0', asset: USD, code: 1 }])).body.results[0].result).toBe('id_must_not_be_zero');
  });

  it('pages through transfers newest first with opaque cursors, under every filter', async () => {
    const [a, b, c] = [account(), account(), account({ asset: USDC })];
    const d = account({ asset: USDC });
    await post('/accounts', [a, b, c, d]);
    const made: string[] = [];
    for (let i = 0; i < 25; i++) {
      const t = i % 5 === 4 ? { ...transfer(c.id, d.id, '1'), asset: USDC } : transfer(a.id, b.id, String(i + 1), { code: i % 2 ? 7 : 8 });
      made.push(t.id);
      expect(await results('/transfers', [t])).toEqual(['created']);
    }
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const answer: any = await get(
        `/transfers?limit=10${cursor ? `&cursor=${cursor}` : ''}&from=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`,
      );
      pages.push(answer.body.data.map((t: any) => t.id).filter((id: string) => made.includes(id)));
      cursor = answer.body.nextCursor;
    } while (cursor);
    expect(pages.flat()).toEqual([...made].reverse());
    const byAccount = await get(`/transfers?account=${b.id}&limit=100`);
    expect(byAccount.body.data).toHaveLength(20);
    expect(byAccount.body.data.every((t: any) => t.creditAccountId === b.id)).toBe(true);
    expect((await get(`/transfers?account=${a.id}&code=7`)).body.data).toHaveLength(10);
    expect((await get(`/transfers?asset=${encodeURIComponent(USDC)}&account=${d.id}`)).body.data).toHaveLength(5);
    expect((await get(`/transfers?account=${a.id}&status=pending`)).body.data).toHaveLength(0);
    expect((await get(`/transfers?account=${a.id}&to=2000-01-01T00:00:00Z`)).body.data).toHaveLength(0);
    expect((await get(`/transfers?account=${randomUUID()}`)).status).toBe(404);
    const accounts = await get(`/accounts?asset=${encodeURIComponent(USDC.toLowerCase())}&limit=1`);
    expect(accounts.body.data.map((x: any) => x.id)).toEqual([d.id]);
    expect((await get(`/accounts?asset=${encodeURIComponent(USDC)}&limit=1&cursor=${accounts.body.nextCursor}`)).body.data.map((x: any) => x.id)).toEqual([
      c.id,
    ]);
  });

  it('gives statements: opening balance, postings with running balances, closing balance, per period and page', async () => {
    const [world, wallet, shop] = [account({ normalBalance: 'debit' }), account(), account()];
    await post('/accounts', [world, wallet, shop]);
    const at: string[] = [];
    for (const [dr, cr, amount] of [
      [world, wallet, '500'],
      [wallet, shop, '120'],
      [wallet, shop, '30'],
      [world, wallet, '5'],
    ] as const) {
      const answer = await post('/transfers', [transfer(dr.id, cr.id, amount)]);
      at.push(answer.body.results[0].timestamp);
      await new Promise((r) => setTimeout(r, 5));
    }
    const hold = transfer(wallet.id, shop.id, '99', { flags: ['pending'] });
    await post('/transfers', [hold]);

    const all = (await get(`/statements?account=${wallet.id}`)).body;
    // atomic units (cents of stripe/usd), and beside them the same in dollars
    expect(all).toMatchObject({ assetSymbol: 'USD', assetDecimals: 2 });
    expect(all.opening).toEqual({ debitsPosted: '0', creditsPosted: '0', balance: '0', balanceDecimal: '0' });
    expect(all.closing).toEqual({ debitsPosted: '150', creditsPosted: '505', balance: '355', balanceDecimal: '3.55' });
    expect(all.entries.map((e: any) => [e.side, e.amount, e.amountDecimal, e.balance, e.balanceDecimal])).toEqual([
      ['credit', '500', '5', '500', '5'],
      ['debit', '120', '1.2', '380', '3.8'],
      ['debit', '30', '0.3', '350', '3.5'],
      ['credit', '5', '0.05', '355', '3.55'],
    ]);
    expect(all.entries[1]).toMatchObject({ counterpartyAccountId: shop.id, code: 1, timestamp: at[1] });

    // the middle two postings: the opening balance is the first one's, the closing the third's
    const period = (await get(`/statements?account=${wallet.id}&from=${encodeURIComponent(at[1])}&to=${encodeURIComponent(at[3])}`)).body;
    expect(period.opening.balance).toBe('500');
    expect(period.entries.map((e: any) => e.amount)).toEqual(['120', '30']);
    expect(period.closing.balance).toBe('350');

    const first = (await get(`/statements?account=${wallet.id}&limit=3`)).body;
    expect(first.entries).toHaveLength(3);
    const rest = (await get(`/statements?account=${wallet.id}&limit=3&cursor=${first.nextCursor}`)).body;
    expect(rest.entries.map((e: any) => e.amount)).toEqual(['5']);
    expect(rest.nextCursor).toBeNull();
    expect(rest.closing).toEqual(first.closing);
    expect((await get(`/statements?account=${world.id}`)).body.closing).toEqual({
      debitsPosted: '505',
      creditsPosted: '0',
      balance: '505',
      balanceDecimal: '5.05',
    });
  });

  it('gives statements in decimals of the asset: Stripe currencies by their minor unit, tokens as the chain describes them, null when unknown', async () => {
    const { manifest } = testChain();
    const anvilUsdc = `${manifest.network}/${manifest.tokens.usdc.address}`;
    const decimalsOf = async (asset: string, amount: string) => {
      const [from, to] = [account({ asset, normalBalance: 'debit' }), account({ asset })];
      expect(await results('/accounts', [from, to])).toEqual(['created', 'created']);
      expect(await results('/transfers', [transfer(from.id, to.id, amount, { asset })])).toEqual(['created']);
      const statement = (await get(`/statements?account=${to.id}`)).body;
      return [
        statement.assetSymbol,
        statement.assetDecimals,
        statement.entries[0].amount,
        statement.entries[0].amountDecimal,
        statement.closing.balanceDecimal,
      ];
    };
    expect(await decimalsOf('stripe/jpy', '1234')).toEqual(['JPY', 0, '1234', '1234', '1234']);
    expect(await decimalsOf('stripe/kwd', '1234')).toEqual(['KWD', 3, '1234', '1.234', '1.234']);
    // the test chain's token, read from the contract (symbol and decimals) on the reconciled network
    expect(await decimalsOf(anvilUsdc, '12345678')).toEqual(['USDC', 6, '12345678', '12.345678', '12.345678']);
    // a network this ledger has no RPC URL for: atomic units only
    expect(await decimalsOf(USDC, '12345678')).toEqual([null, null, '12345678', null, null]);
  });
});
