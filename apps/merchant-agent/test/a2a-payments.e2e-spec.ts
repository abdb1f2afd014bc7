import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getAddress, type Address } from 'viem';
import { balanceOf, mineBlock, payerAccount, testChain, withAutomineOff } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { freePort } from '../../../test/support/net';
import { rpc, startA2aMerchant, userMessage, type RunningMerchant } from './a2a-merchant';

const PRICE = 9_000n;
const STATUS = 'x402.payment.status';
const REQUIRED = 'x402.payment.required';
const ERROR = 'x402.payment.error';
const RECEIPTS = 'x402.payment.receipts';

/** What bad input gets: the A2A error or the a2a-x402 payment failure the specs name, and a task left consistent. */
describe('A2A merchant agent: payments refused and failed', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  let facilitator: RunningFacilitator;
  let merchant: RunningMerchant;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    merchant = await startA2aMerchant({ FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: String(PRICE) });
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  const wallet = (payerIndex: number) =>
    new x402Client()
      .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, payerIndex))))
      .setSpendControls(false);
  const merchantBalance = () => balanceOf(chain, usdc, merchantAddress);

  /** A new paid task, waiting in input-required with its offer. */
  const open = async (request = 'forecast Lagos', on = merchant) => {
    const { body } = await rpc(on.url, 'SendMessage', { message: userMessage(request) });
    expect(body.result.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    return body.result.task as { id: string; contextId: string; status: { message: { metadata: Record<string, any> } } };
  };
  const offerOf = (task: Awaited<ReturnType<typeof open>>) => task.status.message.metadata[REQUIRED] as PaymentRequired;
  const submit = (task: { id: string; contextId: string }, payload: unknown, on = merchant) =>
    rpc(on.url, 'SendMessage', {
      message: userMessage('Here is the payment authorization.', {
        taskId: task.id,
        contextId: task.contextId,
        metadata: { [STATUS]: 'payment-submitted', 'x402.payment.payload': payload },
      }),
    });
  const paymentRow = async (taskId: string) =>
    (
      await merchant.db.$queryRawUnsafe<{ status: string; attempts: number; error: string | null }[]>(
        `SELECT status, attempts, error FROM merchant.a2a_payments WHERE task_id = $1`,
        taskId,
      )
    )[0];

  it('refuses a paid skill without the x402 extension activated (-32008) and opens no task', async () => {
    const [{ n: before }] = await merchant.db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM merchant.a2a_payments`);

    const { status, body } = await rpc(merchant.url, 'SendMessage', { message: userMessage('forecast Lagos') }, { 'a2a-extensions': '' });

    expect(status).toBe(200);
    expect(body.error).toMatchObject({ code: -32008, message: expect.stringContaining('activate the x402 extension') });
    const [{ n: after }] = await merchant.db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM merchant.a2a_payments`);
    expect(after).toBe(before);
  });

  it('asks a message naming no skill of this agent which one it wants (input-required, not an error), naming the skills it has', async () => {
    const { body } = await rpc(merchant.url, 'SendMessage', { message: userMessage('dance tango') });
    expect(body.error).toBeUndefined();
    expect(body.result.task.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: { parts: [{ text: expect.stringContaining('This agent offers forecast (Weather forecast): 9000 atomic units') }] },
    });
  });

  it('repeats the offer to a message that carries no payment', async () => {
    const task = await open();
    const { body } = await rpc(merchant.url, 'SendMessage', { message: userMessage('how much?', { taskId: task.id, contextId: task.contextId }) });
    expect(body.result.task.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: { metadata: { [STATUS]: 'payment-required', [REQUIRED]: offerOf(task) } },
    });
  });

  it('takes a payment made for another task as INVALID_PAYLOAD and asks again; the right one then completes the task', async () => {
    const [taskA, taskB] = [await open(), await open()];
    const before = await merchantBalance();

    const wrong = await submit(taskB, await wallet(0).createPaymentPayload(offerOf(taskA)));

    const retry = wrong.body.result.task;
    expect(retry.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: {
        metadata: {
          [STATUS]: 'payment-required',
          [ERROR]: 'INVALID_PAYLOAD',
          [REQUIRED]: offerOf(taskB),
          [RECEIPTS]: [{ success: false, errorReason: 'invalid_payment_requirements', transaction: '' }],
        },
      },
    });
    // The failure itself is in the history, as the spec's payment-failed status.
    expect(retry.history.map((m: any) => m.metadata?.[STATUS]).filter(Boolean)).toEqual([
      'payment-required',
      'payment-submitted',
      'payment-submitted',
      'payment-failed',
      'payment-required',
    ]);
    expect(await paymentRow(taskB.id)).toEqual({ status: 'required', attempts: 1, error: 'INVALID_PAYLOAD' });

    const right = await submit(taskB, await wallet(0).createPaymentPayload(offerOf(taskB)));
    expect(right.body.result.task.status).toMatchObject({ state: 'TASK_STATE_COMPLETED', message: { metadata: { [STATUS]: 'payment-completed' } } });
    expect(right.body.result.task.status.message.metadata[RECEIPTS].map((r: any) => r.success)).toEqual([false, true]);
    expect(await merchantBalance()).toBe(before + PRICE);
  });

  it("names a wrong amount, a wrong recipient and a bad signature (the facilitator's reason), and fails the task at the third", async () => {
    const task = await open();
    const offer = offerOf(task);
    const before = await merchantBalance();
    const altered = (change: object): PaymentRequired => ({ ...offer, accepts: [{ ...offer.accepts[0], ...change }] });

    const cheaper = await submit(task, await wallet(1).createPaymentPayload(altered({ amount: '1' })));
    expect(cheaper.body.result.task.status.message.metadata).toMatchObject({ [STATUS]: 'payment-required', [ERROR]: 'INVALID_AMOUNT' });

    const elsewhere = await submit(task, await wallet(1).createPaymentPayload(altered({ payTo: payerAccount(manifest, 5).address })));
    expect(elsewhere.body.result.task.status.message.metadata).toMatchObject({ [STATUS]: 'payment-required', [ERROR]: 'INVALID_PAYLOAD' });

    const forged = (await wallet(1).createPaymentPayload(offer)) as PaymentPayload & { payload: { signature: string } };
    const signature = forged.payload.signature;
    forged.payload.signature = `${signature.slice(0, 10)}${signature[10] === '0' ? '1' : '0'}${signature.slice(11)}`;
    const third = await submit(task, forged);

    expect(third.body.result.task.status).toMatchObject({
      state: 'TASK_STATE_FAILED',
      message: { metadata: { [STATUS]: 'payment-failed', [ERROR]: 'INVALID_SIGNATURE' } },
    });
    expect(third.body.result.task.status.message.metadata[RECEIPTS].map((r: any) => r.errorReason)).toEqual([
      'invalid_exact_evm_authorization_value',
      'invalid_exact_evm_recipient_mismatch',
      'invalid_exact_evm_signature',
    ]);
    expect(await paymentRow(task.id)).toEqual({ status: 'failed', attempts: 3, error: 'INVALID_SIGNATURE' });
    expect(await merchantBalance()).toBe(before);

    const late = await submit(task, await wallet(1).createPaymentPayload(offer));
    expect(late.body.error).toMatchObject({ code: -32004 });
  });

  it('refuses a replayed authorization on another task (DUPLICATE_NONCE) and any message to a paid task (-32004): one payment, one task', async () => {
    const [taskA, taskB] = [await open(), await open()];
    const payload = (await wallet(2).createPaymentPayload(offerOf(taskA))) as PaymentPayload;
    const before = await merchantBalance();
    expect((await submit(taskA, payload)).body.result.task.status.state).toBe('TASK_STATE_COMPLETED');

    // The resource is not signed: rewritten, the authorization looks like a payment for B, and only its nonce gives it away.
    const replay = await submit(taskB, { ...payload, resource: offerOf(taskB).resource });
    expect(replay.body.result.task.status).toMatchObject({ state: 'TASK_STATE_INPUT_REQUIRED', message: { metadata: { [ERROR]: 'DUPLICATE_NONCE' } } });

    const again = await submit(taskA, payload);
    expect(again.body.error).toMatchObject({ code: -32004, message: expect.stringContaining('terminal state') });
    expect(await merchantBalance()).toBe(before + PRICE);
  });

  it('settles a payment submitted twice at once exactly once', async () => {
    const task = await open();
    const payload = await wallet(0).createPaymentPayload(offerOf(task));
    const before = await merchantBalance();

    const answers = await Promise.all([submit(task, payload), submit(task, payload)]);

    const completed = answers.filter((a) => a.body.result?.task?.status.state === 'TASK_STATE_COMPLETED');
    const refused = answers.filter((a) => a.body.result?.message || a.body.error?.code === -32004);
    expect([completed.length, refused.length]).toEqual([1, 1]);
    expect(await merchantBalance()).toBe(before + PRICE);
    expect(await paymentRow(task.id)).toMatchObject({ status: 'completed', attempts: 1 });
    const { body } = await rpc(merchant.url, 'GetTask', { id: task.id, historyLength: 0 });
    expect(body.result.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('cancels a task waiting for its payment, not one whose payment went through (-32002)', async () => {
    const waiting = await open();
    const canceled = await rpc(merchant.url, 'CancelTask', { id: waiting.id });
    expect(canceled.body.result.status.state).toBe('TASK_STATE_CANCELED');
    expect(await paymentRow(waiting.id)).toMatchObject({ status: 'canceled' });
    expect((await submit(waiting, await wallet(0).createPaymentPayload(offerOf(waiting)))).body.error).toMatchObject({ code: -32004 });

    const paid = await open();
    await submit(paid, await wallet(0).createPaymentPayload(offerOf(paid)));
    expect((await rpc(merchant.url, 'CancelTask', { id: paid.id })).body.error).toMatchObject({ code: -32002 });
  });

  it('keeps the task waiting when the facilitator cannot be reached: nothing moved, the buyer may pay again', async () => {
    const stranded = await startA2aMerchant({ FACILITATOR_URL: `http://127.0.0.1:${await freePort()}`, MERCHANT_PRICE: String(PRICE) });
    try {
      const task = await open('forecast Lagos', stranded);
      const { body } = await submit(task, await wallet(0).createPaymentPayload(offerOf(task)), stranded);
      expect(body.result.task.status).toMatchObject({
        state: 'TASK_STATE_INPUT_REQUIRED',
        message: {
          metadata: { [STATUS]: 'payment-required', [ERROR]: 'SETTLEMENT_FAILED', [RECEIPTS]: [{ success: false, errorReason: 'unexpected_verify_error' }] },
        },
      });
    } finally {
      await stranded.close();
    }
  });

  it('keeps a task working while its settlement outcome is unknown, and completes it once the facilitator knows', async () => {
    // The facilitator answers settlement_pending while the transaction waits unmined; the agent asks again later.
    const slow = await startFacilitator({ SETTLE_BUDGET_MS: '300' });
    const patient = await startA2aMerchant({ FACILITATOR_URL: slow.url, MERCHANT_PRICE: String(PRICE), MERCHANT_A2A_SETTLE_RETRY_MS: '200' });
    try {
      const task = await open('forecast Quito', patient);
      const before = await merchantBalance();
      const answer = await withAutomineOff(chain, async () => (await submit(task, await wallet(2).createPaymentPayload(offerOf(task)), patient)).body);
      expect(answer.result.task.status).toMatchObject({ state: 'TASK_STATE_WORKING', message: { metadata: { [STATUS]: 'payment-verified' } } });
      expect(await paymentRow(task.id)).toMatchObject({ status: 'settling' });
      // another payment meanwhile changes nothing: the task takes one
      const again = (await submit(task, await wallet(2).createPaymentPayload(offerOf(task)), patient)).body;
      expect(again.result.message).toMatchObject({
        parts: [{ text: expect.stringContaining('its payment is settling') }],
        metadata: { [STATUS]: 'payment-verified' },
      });

      await mineBlock(chain);
      let done: any;
      for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
        done = (await rpc(patient.url, 'GetTask', { id: task.id })).body.result;
        if (done.status.state !== 'TASK_STATE_WORKING') break;
      }
      expect(done.status).toMatchObject({
        state: 'TASK_STATE_COMPLETED',
        message: { metadata: { [STATUS]: 'payment-completed', [RECEIPTS]: [{ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) }] } },
      });
      expect(done.artifacts).toEqual([expect.objectContaining({ parts: [expect.objectContaining({ data: expect.objectContaining({ location: 'Quito' }) })] })]);
      expect(await paymentRow(task.id)).toMatchObject({ status: 'completed' });
      expect(await merchantBalance()).toBe(before + PRICE);
    } finally {
      await patient.close();
      await slow.close();
    }
  });
});
