import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, ServiceParameters, withA2AExtensions, type Client } from '@a2a-js/sdk/client';
import { x402Client } from '@x402/core/client';
import type { PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getAddress, type Address, type Hex } from 'viem';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startA2aMerchant, X402_V02, type RunningMerchant } from './a2a-merchant';

const PRICE = 11_000n;

/** Tasks and their payments live in PostgreSQL: a merchant agent restarted between the offer and the payment still completes it. */
describe('A2A merchant agent: restarted between input-required and payment', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  const x402 = { serviceParameters: ServiceParameters.create(withA2AExtensions(X402_V02)) };
  let facilitator: RunningFacilitator;
  let merchant: RunningMerchant | undefined;

  beforeAll(async () => {
    facilitator = await startFacilitator();
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  const message = (text: string, fields: Partial<Message> = {}): Message => ({
    messageId: crypto.randomUUID(),
    taskId: '',
    contextId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...fields,
  });
  const send = (client: Client, m: Message) =>
    client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined }, x402) as Promise<Task>;

  it('keeps the task and its offer, serves GetTask and resubscription, and completes the payment', async () => {
    const env = { FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: String(PRICE) };
    merchant = await startA2aMerchant(env);
    const offered = await send(await new ClientFactory().createFromUrl(merchant.url), message('forecast Coimbra'));
    expect(offered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    // A new process, on another port (fetch would otherwise reuse its connections to the old one); a new client.
    await merchant.close();
    merchant = await startA2aMerchant(env);
    const client = await new ClientFactory().createFromUrl(merchant.url);

    const found = await client.getTask({ tenant: '', id: offered.id, historyLength: undefined });
    expect(found.status).toEqual(offered.status);
    expect(found.history.map((m) => m.messageId)).toEqual(offered.history.map((m) => m.messageId));
    const resubscribed = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: offered.id })) resubscribed.push(event.payload);
    expect(resubscribed).toEqual([{ $case: 'task', value: expect.objectContaining({ id: offered.id, status: offered.status }) }]);

    const required = found.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired;
    const wallet = new x402Client()
      .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, 1))))
      .setSpendControls(false);
    const before = await balanceOf(chain, usdc, merchantAddress);
    const paid = await send(
      client,
      message('Here is the payment authorization.', {
        taskId: offered.id,
        contextId: offered.contextId,
        metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': await wallet.createPaymentPayload(required) },
      }),
    );

    expect(paid.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const [receipt] = paid.status?.message?.metadata?.['x402.payment.receipts'] as { success: boolean; transaction: Hex }[];
    expect(receipt.success).toBe(true);
    expect((await chain.getTransactionReceipt({ hash: receipt.transaction })).status).toBe('success');
    expect(await balanceOf(chain, usdc, merchantAddress)).toBe(before + PRICE);
    const listed = await client.listTasks({
      tenant: '',
      contextId: offered.contextId,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((t) => [t.id, t.status?.state])).toEqual([[offered.id, TaskState.TASK_STATE_COMPLETED]]);
  });
});
