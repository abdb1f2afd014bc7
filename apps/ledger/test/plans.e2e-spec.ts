import { randomUUID } from 'node:crypto';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USDC = 'eip155:8453/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

describe('ledger API: subscription plans', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  let other: TestMerchant;
  const post = (path: string, body?: unknown, key = merchant.apiKey) => call(`${ledger.url}${path}`, { key, method: 'POST', body });
  const get = (path: string, key = merchant.apiKey) => call(`${ledger.url}${path}`, { key });
  const plan = (extra: Record<string, unknown> = {}) => ({
    id: randomUUID(),
    name: `Pro ${randomUUID().slice(0, 8)}`,
    product: 'pro',
    amount: '10000000',
    asset: USDC,
    periodUnit: 'month',
    periodCount: 1,
    ...extra,
  });

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url });
    merchant = createMerchant('Plans merchant');
    other = createMerchant('Plans merchant B');
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  it('creates a plan (201), answers the same request again with it (200), and reads it back', async () => {
    const body = plan({ trialDays: 14, endsAt: '2028-01-01T00:00:00+01:00', cancelRefund: 'unused_part' });
    const created = await post('/plans', body);
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const expected = {
      id: body.id,
      name: body.name,
      product: 'pro',
      amount: '10000000',
      asset: USDC.toLowerCase(),
      periodUnit: 'month',
      periodCount: 1,
      trialDays: 14,
      endsAt: '2027-12-31T23:00:00.000Z',
      onDunningExhausted: 'canceled',
      cancelRefund: 'unused_part',
      usage: [],
      archived: false,
      archivedAt: null,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    };
    expect(created.body).toEqual(expected);

    // the same terms, written differently (asset case, the same instant in UTC)
    const again = await post('/plans', { ...body, asset: USDC.toLowerCase(), endsAt: '2027-12-31T23:00:00Z' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
    expect((await get(`/plans/${body.id}`)).body).toEqual(created.body);
  });

  it('refuses the same id with other terms, and another plan of the same product and name, with 409 plan_conflict', async () => {
    const body = plan();
    expect((await post('/plans', body)).status).toBe(201);
    const otherTerms = await post('/plans', { ...body, amount: '10000001', periodUnit: 'week', onDunningExhausted: 'unpaid' });
    expect(otherTerms.status).toBe(409);
    expect(otherTerms.body).toMatchObject({
      code: 'plan_conflict',
      status: 409,
      planId: body.id,
      conflictingFields: ['amount', 'periodUnit', 'onDunningExhausted'],
      detail: `plan ${body.id} exists with other terms: amount, periodUnit, onDunningExhausted`,
    });
    const sameName = await post('/plans', { ...body, id: randomUUID() });
    expect(sameName.status).toBe(409);
    expect(sameName.body).toMatchObject({
      code: 'plan_conflict',
      planId: body.id,
      detail: `open plan ${body.id} is already named "${body.name}" for product "pro": archive it first, or choose another name`,
    });
    expect((await get(`/plans/${body.id}`)).body.amount).toBe('10000000');
    // the same name for another product is another plan
    expect((await post('/plans', { ...body, id: randomUUID(), product: 'team' })).status).toBe(201);
  });

  it('keeps plans to their merchant: ids and names are per merchant, and another merchant gets 404', async () => {
    const body = plan();
    expect((await post('/plans', body)).status).toBe(201);
    expect((await get(`/plans/${body.id}`, other.apiKey)).status).toBe(404);
    expect((await get(`/plans/${body.id}`, other.apiKey)).body).toMatchObject({ code: 'not_found' });
    expect((await post(`/plans/${body.id}/archive`, undefined, other.apiKey)).status).toBe(404);
    expect((await get('/plans', other.apiKey)).body.data.map((p: any) => p.id)).not.toContain(body.id);
    // the same id and name mean another plan to the other merchant
    expect((await post('/plans', { ...body, amount: '5' }, other.apiKey)).status).toBe(201);
    expect((await get(`/plans/${body.id}`)).body.amount).toBe('10000000');
    expect((await get(`/plans/${body.id}`, other.apiKey)).body.amount).toBe('5');
  });

  it('pages through plans newest first, filtered by product and archived', async () => {
    const seller = createMerchant('Plans merchant with many plans');
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      const body = plan({ product: i % 2 ? 'basic' : 'pro' });
      made.push(body.id);
      expect((await post('/plans', body, seller.apiKey)).status).toBe(201);
    }
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const answer: any = await get(`/plans?limit=3${cursor ? `&cursor=${cursor}` : ''}`, seller.apiKey);
      expect(answer.status).toBe(200);
      pages.push(answer.body.data.map((p: any) => p.id));
      cursor = answer.body.nextCursor;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual([...made].reverse());
    expect((await get('/plans?product=basic', seller.apiKey)).body.data.map((p: any) => p.id)).toEqual([made[5], made[3], made[1]]);

    const archived = await post(`/plans/${made[2]}/archive`, undefined, seller.apiKey);
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ id: made[2], archived: true, archivedAt: expect.any(String) });
    expect((await get('/plans?archived=true', seller.apiKey)).body.data.map((p: any) => p.id)).toEqual([made[2]]);
    expect((await get('/plans?archived=false&product=pro', seller.apiKey)).body.data.map((p: any) => p.id)).toEqual([made[6], made[4], made[0]]);
    expect((await get('/plans?cursor=garbage', seller.apiKey)).body.invalidParams).toEqual([{ name: 'cursor', reason: 'is not a cursor this API returned' }]);
  });

  it('archives a plan once: archiving again answers it unchanged, and a retried create still answers it', async () => {
    const body = plan();
    await post('/plans', body);
    const first = await post(`/plans/${body.id}/archive`);
    expect(first.status).toBe(200);
    expect(first.body.archived).toBe(true);
    const second = await post(`/plans/${body.id}/archive`);
    expect(second.body.archivedAt).toBe(first.body.archivedAt);
    expect((await get(`/plans/${body.id}`)).body).toEqual(first.body);
    const retried = await post('/plans', body);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(first.body);
    expect((await post(`/plans/${randomUUID()}/archive`)).status).toBe(404);
  });

  it("frees an archived plan's product and name for a successor plan", async () => {
    const first = plan();
    expect((await post('/plans', first)).status).toBe(201);
    const successor = { ...first, id: randomUUID(), amount: '12000000' };
    expect((await post('/plans', successor)).body).toMatchObject({ code: 'plan_conflict', planId: first.id });
    await post(`/plans/${first.id}/archive`);
    const created = await post('/plans', successor);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: successor.id, name: first.name, amount: '12000000', archived: false });
    expect((await get(`/plans/${first.id}`)).body).toMatchObject({ amount: '10000000', archived: true });
  });

  it('refuses malformed plans with 400 naming the field, and writes nothing of them', async () => {
    const seller = createMerchant('Plans merchant with bad input');
    const cases: [Record<string, unknown>, string][] = [
      [plan({ periodUnit: 'month', periodCount: 121 }), 'periodCount'],
      [plan({ periodUnit: 'day', periodCount: 1.5 }), 'periodCount'],
      [plan({ periodUnit: 'year' }), 'periodUnit'],
      [plan({ amount: '0' }), 'amount'],
      [plan({ amount: '-100' }), 'amount'],
      [plan({ amount: 100 }), 'amount'],
      [plan({ asset: 'USD' }), 'asset'],
      [plan({ trialDays: 731 }), 'trialDays'],
      [plan({ endsAt: 'soon' }), 'endsAt'],
      [plan({ cancelRefund: 'prorated' }), 'cancelRefund'],
      [plan({ interval: 'month' }), 'interval'],
      [plan({ id: 'plan-1' }), 'id'],
    ];
    for (const [body, field] of cases) {
      const answer = await post('/plans', body, seller.apiKey);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: 'validation_failed', status: 400 });
      expect(answer.body.invalidParams.map((p: any) => p.name)).toEqual([field]);
    }
    const zero = await post('/plans', plan({ amount: '0' }), seller.apiKey);
    expect(zero.body.invalidParams).toEqual([{ name: 'amount', reason: 'must be greater than 0: a plan charges something each period' }]);
    expect((await post('/plans', '{"id": ', seller.apiKey)).body).toMatchObject({ status: 400, code: 'malformed_json' });
    expect((await get('/plans/not-an-id', seller.apiKey)).status).toBe(400);
    expect((await get('/plans?archived=maybe', seller.apiKey)).body.invalidParams).toEqual([{ name: 'archived', reason: 'must be true or false' }]);
    expect((await get('/plans', seller.apiKey)).body).toEqual({ data: [], nextCursor: null });
  });

  it('requires a merchant API key', async () => {
    const answer = await call(`${ledger.url}/plans`, {});
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ code: 'unauthorized' });
  });
});
