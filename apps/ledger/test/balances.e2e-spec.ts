import { randomUUID } from 'node:crypto';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USDC = 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const txHash = () => `0x${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '')}`;
const newPayer = () => `0x${randomUUID().replaceAll('-', '').slice(0, 32)}${'ab12cd34'}`;

describe('ledger API: prepaid balances', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  let other: TestMerchant;
  const post = (path: string, body?: unknown, key = merchant.apiKey) => call(`${ledger.url}${path}`, { key, method: 'POST', body });
  const balanceOf = async (payer: string, key = merchant.apiKey) => (await call(`${ledger.url}/balances/${payer}?asset=${USDC}`, { key })).body;
  const topUp = (payer: string, amount: string, paymentReference = txHash()) => post('/balances/top-ups', { payer, asset: USDC, amount, paymentReference });

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url, PENDING_EXPIRY_INTERVAL_MS: '200' });
    merchant = createMerchant('Prepaid merchant');
    other = createMerchant('Prepaid merchant B');
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  it('credits a payment once: the same top-up again is a 200 that adds nothing, the payment for another amount a 409', async () => {
    const payer = newPayer();
    expect(await balanceOf(payer)).toEqual({ payer, asset: USDC, available: '0', held: '0', deposited: '0', spent: '0' });
    const reference = txHash();
    const first = await topUp(payer.toUpperCase().replace('0X', '0x'), '5000', reference);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ payer, asset: USDC, available: '5000', held: '0', deposited: '5000', spent: '0' });
    const again = await topUp(payer, '5000', reference);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ available: '5000', deposited: '5000' });
    const otherAmount = await topUp(payer, '6000', reference);
    expect(otherAmount.status).toBe(409);
    expect(otherAmount.body).toMatchObject({ code: 'balance_conflict', paymentReference: reference });
    const otherPayer = await topUp(newPayer(), '5000', reference);
    expect(otherPayer.status).toBe(409);
    expect(await balanceOf(payer)).toMatchObject({ available: '5000', deposited: '5000' });
  });

  it('charges a known price once per id, and answers 402 with the top-up needed when the balance is short', async () => {
    const payer = newPayer();
    await topUp(payer, '1000');
    const id = `call-${randomUUID()}`;
    const charged = await post('/balances/charges', { id, payer, asset: USDC, amount: '600' });
    expect(charged.status).toBe(201);
    expect(charged.body).toMatchObject({ available: '400', spent: '600' });
    expect((await post('/balances/charges', { id, payer, asset: USDC, amount: '600' })).status).toBe(200);
    expect((await post('/balances/charges', { id, payer, asset: USDC, amount: '700' })).status).toBe(409);

    const short = `call-${randomUUID()}`;
    const refused = await post('/balances/charges', { id: short, payer, asset: USDC, amount: '1000' });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'insufficient_balance', available: '400', required: '1000', topUpNeeded: '600' });
    // the same call again is the same answer, even after a top-up: a new call needs a new id
    await topUp(payer, '600');
    expect((await post('/balances/charges', { id: short, payer, asset: USDC, amount: '1000' })).status).toBe(402);
    expect((await post('/balances/charges', { id: `call-${randomUUID()}`, payer, asset: USDC, amount: '1000' })).status).toBe(201);
    expect(await balanceOf(payer)).toMatchObject({ available: '0', deposited: '1600', spent: '1600' });

    const unknown = await post('/balances/charges', { id: `call-${randomUUID()}`, payer: newPayer(), asset: USDC, amount: '1' });
    expect(unknown.status).toBe(402);
    expect(unknown.body).toMatchObject({ available: '0', topUpNeeded: '1' });
  });

  it('holds the most a call may cost, captures what it cost and releases the rest', async () => {
    const payer = newPayer();
    await topUp(payer, '1000');
    const id = `hold-${randomUUID()}`;
    const held = await post('/balances/holds', { id, payer, asset: USDC, amount: '300' });
    expect(held.status).toBe(201);
    expect(held.body).toMatchObject({ available: '700', held: '300', spent: '0' });
    expect((await post('/balances/holds', { id, payer, asset: USDC, amount: '300' })).status).toBe(200);

    const tooMuch = await post(`/balances/holds/${id}/capture`, { amount: '301' });
    expect(tooMuch.status).toBe(400);
    const captured = await post(`/balances/holds/${id}/capture`, { amount: '120' });
    expect(captured.status).toBe(201);
    expect(captured.body).toEqual({ id, status: 'captured' });
    expect((await post(`/balances/holds/${id}/capture`, { amount: '120' })).status).toBe(200);
    expect(await balanceOf(payer)).toMatchObject({ available: '880', held: '0', spent: '120' });
    expect((await post(`/balances/holds/${id}/release`)).body).toMatchObject({ code: 'hold_closed' });
    expect((await post(`/balances/holds/${id}/capture`, { amount: '100' })).status).toBe(409);

    const released = `hold-${randomUUID()}`;
    await post('/balances/holds', { id: released, payer, asset: USDC, amount: '500' });
    expect((await post(`/balances/holds/${released}/release`)).status).toBe(201);
    expect((await post(`/balances/holds/${released}/release`)).status).toBe(200);
    const zero = `hold-${randomUUID()}`;
    await post('/balances/holds', { id: zero, payer, asset: USDC, amount: '500' });
    expect((await post(`/balances/holds/${zero}/capture`, { amount: '0' })).body).toEqual({ id: zero, status: 'released' });
    expect(await balanceOf(payer)).toMatchObject({ available: '880', held: '0', spent: '120' });
    expect((await post(`/balances/holds/hold-${randomUUID()}/capture`, { amount: '1' })).status).toBe(404);
  });

  it('returns a hold that lapses uncaptured to the balance', async () => {
    const payer = newPayer();
    await topUp(payer, '1000');
    const id = `hold-${randomUUID()}`;
    await post('/balances/holds', { id, payer, asset: USDC, amount: '400', timeoutSeconds: 1 });
    expect(await balanceOf(payer)).toMatchObject({ available: '600', held: '400' });
    await vi.waitFor(async () => expect(await balanceOf(payer)).toMatchObject({ available: '1000', held: '0' }), { timeout: 10_000, interval: 200 });
    expect((await post(`/balances/holds/${id}/capture`, { amount: '400' })).body).toMatchObject({ code: 'hold_closed' });
  });

  it('never overdraws under concurrent draws: exactly what the balance covers goes through', async () => {
    const payer = newPayer();
    await topUp(payer, '1000');
    const holds = await Promise.all(
      Array.from({ length: 30 }, () => post('/balances/holds', { id: `hold-${randomUUID()}`, payer, asset: USDC, amount: '70' })),
    );
    const charges = await Promise.all(
      Array.from({ length: 30 }, () => post('/balances/charges', { id: `call-${randomUUID()}`, payer, asset: USDC, amount: '30' })),
    );
    const statuses = [...holds, ...charges].map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 402)).toBe(true);
    const heldOk = holds.filter((r) => r.status === 201).length;
    const chargedOk = charges.filter((r) => r.status === 201).length;
    const used = BigInt(heldOk * 70 + chargedOk * 30);
    expect(used <= 1000n).toBe(true);
    // a refusal means the balance was short then, and it only shrinks: nothing a refused draw needed is left
    if (chargedOk < 30) expect(1000n - used < 30n).toBe(true);
    if (heldOk < 30) expect(1000n - used < 70n).toBe(true);
    expect(await balanceOf(payer)).toEqual({
      payer,
      asset: USDC,
      available: (1000n - used).toString(),
      held: String(heldOk * 70),
      deposited: '1000',
      spent: String(chargedOk * 30),
    });
  });

  it("keeps merchants apart: another merchant sees no balance and cannot capture the first one's hold", async () => {
    const payer = newPayer();
    await topUp(payer, '1000');
    const id = `hold-${randomUUID()}`;
    await post('/balances/holds', { id, payer, asset: USDC, amount: '100' });
    expect(await balanceOf(payer, other.apiKey)).toMatchObject({ available: '0', deposited: '0' });
    expect((await post(`/balances/holds/${id}/capture`, { amount: '100' }, other.apiKey)).status).toBe(404);
    expect(await balanceOf(payer)).toMatchObject({ available: '900', held: '100' });
  });

  it('refuses malformed requests with 400 naming the field, and requests without a key with 401, writing nothing', async () => {
    const payer = newPayer();
    const cases: [unknown, string][] = [
      [{ payer, asset: USDC, amount: '-1', paymentReference: txHash() }, 'amount'],
      [{ payer, asset: USDC, amount: '0', paymentReference: txHash() }, 'amount'],
      [{ payer, asset: 'usdc', amount: '10', paymentReference: txHash() }, 'asset'],
      [{ payer: 'not a payer!', asset: USDC, amount: '10', paymentReference: txHash() }, 'payer'],
      [{ payer, asset: USDC, amount: '10' }, 'paymentReference'],
      [{ payer, asset: USDC, amount: '10', paymentReference: txHash(), extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const answer = await post('/balances/top-ups', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect((answer.body as { invalidParams: { name: string }[] }).invalidParams.map((p) => p.name)).toContain(field);
    }
    const badHold = await post('/balances/holds', { id: 'h 1', payer, asset: USDC, amount: '1', timeoutSeconds: 0 });
    expect(badHold.status).toBe(400);
    expect(
      (await call(`${ledger.url}/balances/top-ups`, { method: 'POST', body: { payer, asset: USDC, amount: '1', paymentReference: txHash() } })).status,
    ).toBe(401);
    expect(await balanceOf(payer)).toMatchObject({ available: '0', deposited: '0' });
  });
});
