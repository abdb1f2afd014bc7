import { createServer, type Server } from 'node:http';
import { Test } from '@nestjs/testing';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getAddress, type Address, type Hex } from 'viem';
import { configureHttpApp } from '@mp/platform';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startTcpProxy } from '../../../test/support/tcp-proxy';
import { until } from '../../../test/support/webhook-receiver';
import { checkSubmission } from '../src/a2a/x402/submitted-payment';
import { TaskPayments } from '../src/a2a/x402/payment.repository';
import { AppModule } from '../src/app.module';
import { loadMerchantConfig } from '../src/merchant.config';
import { createMppPaywall } from '../src/mpp/mpp-paywall';
import { rpc, startA2aMerchant, userMessage, type RunningMerchant } from './a2a-merchant';

const PRICE = 8_000n;
const STATUS = 'x402.payment.status';
const REQUIRED = 'x402.payment.required';
const RECEIPTS = 'x402.payment.receipts';
const TERMINAL = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'];

type OpenTask = { id: string; contextId: string; status: { message: { metadata: Record<string, any> } } };

/**
 * A merchant agent that stops in the middle of a payment's turn leaves it `submitted` or `verified`; the next one to
 * boot settles it with the same authorization and completes the task, paid once. Every facilitator call has a timeout.
 */
describe('A2A merchant agent: recovery after a crash, and facilitator timeouts', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  let facilitator: RunningFacilitator;
  const running: RunningMerchant[] = [];

  beforeAll(async () => {
    facilitator = await startFacilitator();
  });
  afterAll(async () => {
    for (const merchant of running) await merchant.close();
    await facilitator?.close();
  });

  const start = async (env: Record<string, string>) => {
    const merchant = await startA2aMerchant({ FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: String(PRICE), ...env });
    running.push(merchant);
    return merchant;
  };
  const stop = async (merchant: RunningMerchant) => {
    await merchant.close();
    running.splice(running.indexOf(merchant), 1);
  };
  const wallet = (payerIndex: number) =>
    new x402Client()
      .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, payerIndex))))
      .setSpendControls(false);
  const open = async (on: RunningMerchant, request: string) => {
    const { body } = await rpc(on.url, 'SendMessage', { message: userMessage(request) });
    expect(body.result.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    return body.result.task as OpenTask;
  };
  const offerOf = (task: OpenTask) => task.status.message.metadata[REQUIRED] as PaymentRequired;
  const submit = (on: RunningMerchant, task: OpenTask, payload: unknown) =>
    rpc(on.url, 'SendMessage', {
      message: userMessage('Here is the payment authorization.', {
        taskId: task.id,
        contextId: task.contextId,
        metadata: { [STATUS]: 'payment-submitted', 'x402.payment.payload': payload },
      }),
    });
  const paymentRow = async (on: RunningMerchant, taskId: string) =>
    (
      await on.db.$queryRawUnsafe<{ status: string; attempts: number; payer: string | null }[]>(
        `SELECT status, attempts, payer FROM merchant.a2a_payments WHERE task_id = $1`,
        taskId,
      )
    )[0];
  const usdcOf = (address: Address) => balanceOf(chain, usdc, address);
  /** Ages rows as an hour-old crash leaves them: the payments and their submissions, by the same interval. */
  const ageAnHour = async (on: RunningMerchant, taskIds: string[]) => {
    await on.db.$executeRawUnsafe(`UPDATE merchant.a2a_payments SET updated_at = updated_at - interval '1 hour' WHERE task_id = ANY($1::text[])`, taskIds);
    await on.db.$executeRawUnsafe(
      `UPDATE merchant.a2a_payment_submissions SET created_at = created_at - interval '1 hour' WHERE task_id = ANY($1::text[])`,
      taskIds,
    );
  };

  it('settles at boot the payments a killed agent left verified (its /settle already sent) and submitted, completing each task once', async () => {
    // The agent that "crashes": it opens the tasks; the rows are then written as its killed turns leave them.
    const crashed = await start({ MERCHANT_A2A_SETTLE_RETRY_MS: '0' });
    const leftVerified = await open(crashed, 'forecast Tavira');
    const leftSubmitted = await open(crashed, 'forecast Sines');
    const leftMalformed = await open(crashed, 'forecast Elvas');
    const payloads = {
      verified: await wallet(4).createPaymentPayload(offerOf(leftVerified)),
      submitted: await wallet(5).createPaymentPayload(offerOf(leftSubmitted)),
    };
    const payments = crashed.app.get(TaskPayments);
    const claim = async (task: OpenTask, payload: unknown) => {
      const check = checkSubmission(payload, offerOf(task));
      if (!check.ok) throw new Error(check.message);
      expect(await payments.claim(task.id, { messageId: crypto.randomUUID(), payer: check.payer, nonce: check.nonce, payload: check.payload })).toMatchObject({
        kind: 'claimed',
      });
    };
    const before = {
      merchant: await usdcOf(merchantAddress),
      payer4: await usdcOf(payerAccount(manifest, 4).address),
      payer5: await usdcOf(payerAccount(manifest, 5).address),
    };

    // killed after /verify answered and /settle was sent: the facilitator settled it, the answer was lost with the process
    await claim(leftVerified, payloads.verified);
    expect(await payments.transition(leftVerified.id, ['submitted'], 'verified', { payer: payerAccount(manifest, 4).address })).toBeDefined();
    const lostAnswer = await new HTTPFacilitatorClient({ url: facilitator.url }).settle(payloads.verified, offerOf(leftVerified).accepts[0]);
    expect(lostAnswer).toMatchObject({ success: true });
    // killed right after the claim, before /verify
    await claim(leftSubmitted, payloads.submitted);
    // killed after claiming a malformed payload, before answering it
    expect(await payments.claim(leftMalformed.id)).toMatchObject({ kind: 'claimed' });
    // ... an hour ago: long past any live turn
    await ageAnHour(crashed, [leftVerified.id, leftSubmitted.id, leftMalformed.id]);
    await stop(crashed);

    // a new agent: its sweep runs at boot (the periodic one would come only after ten minutes)
    const recovered = await start({ MERCHANT_A2A_SETTLE_RETRY_MS: '600000' });
    const settled = async (task: OpenTask) => {
      return until(`task ${task.id} finished`, async () => {
        const found = (await rpc(recovered.url, 'GetTask', { id: task.id })).body.result;
        return TERMINAL.includes(found.status.state) ? found : undefined;
      });
    };

    const verified = await settled(leftVerified);
    expect(verified.status).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
      message: { metadata: { [STATUS]: 'payment-completed', [RECEIPTS]: [{ success: true, transaction: lostAnswer.transaction }] } },
    });
    expect(verified.artifacts).toEqual([
      expect.objectContaining({ parts: [expect.objectContaining({ data: expect.objectContaining({ location: 'Tavira' }) })] }),
    ]);
    const submitted = await settled(leftSubmitted);
    expect(submitted.status).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
      message: { metadata: { [STATUS]: 'payment-completed', [RECEIPTS]: [{ success: true }] } },
    });
    const [receipt] = submitted.status.message.metadata[RECEIPTS] as { transaction: Hex }[];
    expect((await chain.getTransactionReceipt({ hash: receipt.transaction })).status).toBe('success');
    expect(await paymentRow(recovered, leftSubmitted.id)).toMatchObject({ status: 'completed', payer: payerAccount(manifest, 5).address.toLowerCase() });

    // paid exactly once each: the merchant got two prices, each payer paid one
    expect({
      merchant: await usdcOf(merchantAddress),
      payer4: await usdcOf(payerAccount(manifest, 4).address),
      payer5: await usdcOf(payerAccount(manifest, 5).address),
    }).toEqual({
      merchant: before.merchant + 2n * PRICE,
      payer4: before.payer4 - PRICE,
      payer5: before.payer5 - PRICE,
    });

    // the malformed attempt failed as its turn would have failed it; the buyer pays again and the task completes
    await until('the malformed attempt answered', async () => ((await paymentRow(recovered, leftMalformed.id)).status !== 'submitted' ? true : undefined));
    expect(await paymentRow(recovered, leftMalformed.id)).toMatchObject({ status: 'required', attempts: 1 });
    const waiting = (await rpc(recovered.url, 'GetTask', { id: leftMalformed.id })).body.result;
    expect(waiting.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: { metadata: { [STATUS]: 'payment-required', 'x402.payment.error': 'INVALID_PAYLOAD' } },
    });
    const paid = await submit(recovered, leftMalformed, await wallet(4).createPaymentPayload(offerOf(leftMalformed)));
    expect(paid.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await stop(recovered);
  });

  it('lets one replica only take a stranded payment: two sweeps at once split them', async () => {
    const merchant = await start({ MERCHANT_A2A_SETTLE_RETRY_MS: '0' });
    const payments = merchant.app.get(TaskPayments);
    const tasks = await Promise.all(Array.from({ length: 6 }, (_, i) => open(merchant, `forecast Town${i}`)));
    for (const [i, task] of tasks.entries()) {
      const payload = await wallet(6).createPaymentPayload(offerOf(task));
      const check = checkSubmission(payload, offerOf(task));
      if (!check.ok) throw new Error(check.message);
      expect(await payments.claim(task.id, { messageId: `m-${i}`, payer: check.payer, nonce: check.nonce, payload: check.payload })).toMatchObject({
        kind: 'claimed',
      });
    }
    const ids = tasks.map((task) => task.id);
    await ageAnHour(merchant, ids);

    const [a, b] = await Promise.all([payments.takeStranded(60_000, 20), payments.takeStranded(60_000, 20)]);
    const taken = [...a, ...b].map((payment) => payment.taskId).filter((id) => ids.includes(id));
    expect(taken.sort()).toEqual([...ids].sort());
    expect([...a, ...b].every((payment) => payment.status === 'settling' && payment.strandedIn === 'submitted' && payment.payload)).toBe(true);
    // none is taken again while its lease (updated_at) is fresh
    expect((await payments.takeStranded(60_000, 20)).filter((payment) => ids.includes(payment.taskId))).toEqual([]);
    // out of later sweeps' way: nothing was sent for these
    await merchant.db.$executeRawUnsafe(`UPDATE merchant.a2a_payments SET status = 'failed' WHERE task_id = ANY($1::text[])`, ids);
    await stop(merchant);
  });

  it('times out a /settle whose answer never comes, takes it as unknown (not failed), asks again and completes the task once', async () => {
    const proxy = await startLosingProxy(facilitator.url);
    try {
      const merchant = await start({ FACILITATOR_URL: proxy.url, MERCHANT_FACILITATOR_TIMEOUT_MS: '1000' });
      const task = await open(merchant, 'forecast Nazare');
      const before = await usdcOf(merchantAddress);

      const { body } = await submit(merchant, task, await wallet(7).createPaymentPayload(offerOf(task)));

      expect(proxy.settles()).toBe(2); // the first answer was lost: the agent gave up waiting and asked again
      expect(body.result.task.status).toMatchObject({
        state: 'TASK_STATE_COMPLETED',
        message: { metadata: { [STATUS]: 'payment-completed', [RECEIPTS]: [{ success: true }] } },
      });
      expect(await usdcOf(merchantAddress)).toBe(before + PRICE);
      await stop(merchant);
    } finally {
      await proxy.close();
    }
  });

  it('answers the MPP route 503 when the facilitator accepts the connection and never answers, instead of hanging', async () => {
    const silent = await startTcpProxy(Number(new URL(facilitator.url).port));
    silent.set('hang');
    const config = loadMerchantConfig({
      ...process.env,
      FACILITATOR_URL: silent.url('http'),
      MERCHANT_FACILITATOR_TIMEOUT_MS: '500',
      MERCHANT_A2A_SETTLE_RETRY_MS: '0',
    });
    const app = (await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile()).createNestApplication({
      bodyParser: false,
      logger: ['error'],
    });
    try {
      configureHttpApp(app);
      app.use(createMppPaywall(config));
      await app.listen(0, '127.0.0.1');
      const response = await fetch(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}/mpp/forecast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ city: 'Porto' }),
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({
        code: 'upstream_unavailable',
        detail: expect.stringMatching(/the payment facilitator is unreachable: .*(timeout|aborted)/i),
      });
    } finally {
      await app.close();
      await silent.close();
    }
  });
});

/** An HTTP proxy in front of the facilitator that forwards everything and loses the answer to the first /settle. */
async function startLosingProxy(target: string): Promise<{ url: string; settles(): number; close(): Promise<void> }> {
  let settles = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/json' };
        if (req.headers.authorization) headers.authorization = req.headers.authorization;
        const answer = await fetch(new URL(req.url ?? '/', target), {
          method: req.method,
          headers,
          body: req.method === 'GET' ? undefined : Buffer.concat(chunks),
        });
        const body = Buffer.from(await answer.arrayBuffer());
        if (new URL(req.url ?? '/', target).pathname === '/settle' && ++settles === 1) return; // settled; the answer is lost
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(body);
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    settles: () => settles,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
