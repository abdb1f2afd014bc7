import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, ServiceParameters, withA2AExtensions, type Client } from '@a2a-js/sdk/client';
import { x402Client } from '@x402/core/client';
import type { PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getAddress, type Address, type Hex } from 'viem';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { rpc, startA2aMerchant, X402_V02, type RunningMerchant } from './a2a-merchant';

const PRICE = 13_000n;
const HAIKU_PRICE = 6_000n;

/** How a buyer names a skill: metadata, a data part, or natural language; a message naming none is asked which one. */
describe('A2A merchant agent: routing a message to a skill', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  const x402 = { serviceParameters: ServiceParameters.create(withA2AExtensions(X402_V02)) };
  let facilitator: RunningFacilitator;
  let merchant: RunningMerchant;
  let client: Client;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    merchant = await startA2aMerchant({ FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: String(PRICE), MERCHANT_HAIKU_PRICE: String(HAIKU_PRICE) });
    client = await new ClientFactory().createFromUrl(merchant.url);
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  const text = (value: string): Part => ({ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: undefined });
  const message = (parts: Part[], fields: Partial<Message> = {}): Message => ({
    messageId: crypto.randomUUID(),
    taskId: '',
    contextId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...fields,
  });
  const send = (m: Message) => client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined }, x402) as Promise<Task>;
  const wallet = (payerIndex: number) =>
    new x402Client()
      .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, payerIndex))))
      .setSpendControls(false);
  /** Pays the offer of a task in input-required, on the same task, as an a2a-x402 client does. */
  const pay = async (task: Task, payerIndex: number) => {
    const required = task.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired;
    const payload = await wallet(payerIndex).createPaymentPayload(required);
    return send(
      message([text('Here is the payment authorization.')], {
        taskId: task.id,
        contextId: task.contextId,
        metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payload },
      }),
    );
  };
  const statusText = (task: Task) => (task.status?.message?.parts[0]?.content as { value: string } | undefined)?.value ?? '';

  it('sells to the official A2A client a forecast asked in natural language with metadata.skillId: paid on chain, completed', async () => {
    const before = await balanceOf(chain, usdc, merchantAddress);

    const offered = await send(message([text('Please run skill forecast (Weather forecast) on: hello')], { metadata: { skillId: 'forecast' } }));
    expect(offered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(offered.status?.message?.metadata).toMatchObject({
      'x402.payment.status': 'payment-required',
      'x402.payment.required': { accepts: [{ amount: String(PRICE) }] },
    });
    const paid = await pay(offered, 3);

    expect(paid.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(paid.artifacts.flatMap((a) => a.parts.map((p) => p.content?.value))).toEqual([expect.objectContaining({ location: 'hello' })]);
    const [receipt] = paid.status?.message?.metadata?.['x402.payment.receipts'] as { success: boolean; transaction: Hex }[];
    expect(receipt.success).toBe(true);
    expect((await chain.getTransactionReceipt({ hash: receipt.transaction })).status).toBe('success');
    expect(await balanceOf(chain, usdc, merchantAddress)).toBe(before + PRICE);
  });

  it('routes natural language without metadata by the skill id it contains', async () => {
    const offered = await send(message([text('Hi! Could you write me a Haiku on: autumn rain')]));
    expect(offered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(offered.metadata).toEqual({ skill: 'haiku' });
    expect(offered.status?.message?.metadata?.['x402.payment.required']).toMatchObject({
      accepts: [{ amount: String(HAIKU_PRICE) }],
      resource: { description: 'Haiku: autumn rain' },
    });
  });

  it('asks a message that names no skill which one it wants (input-required, listing skills and prices), then sells the one named on that task', async () => {
    const asked = await send(message([text('hello, what can you do for me?')]));

    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(asked)).toMatch(
      /^Which skill\? This message names no skill of this agent\. This agent offers forecast \(Weather forecast\): 13000 atomic units of 0x[0-9a-fA-F]{40} on eip155:\d+; haiku \(Haiku\): 6000 atomic units/,
    );
    expect(asked.status?.message?.metadata?.skills).toEqual([
      expect.objectContaining({ id: 'forecast', price: expect.objectContaining({ amount: String(PRICE) }) }),
      expect.objectContaining({ id: 'haiku', price: expect.objectContaining({ amount: String(HAIKU_PRICE) }) }),
      expect.objectContaining({ id: 'ping', price: null }),
    ]);

    // still none: asked again, on the same task
    const again = await send(message([text('hmm, not sure')], { taskId: asked.id, contextId: asked.contextId }));
    expect([again.id, again.status?.state]).toEqual([asked.id, TaskState.TASK_STATE_INPUT_REQUIRED]);

    const before = await balanceOf(chain, usdc, merchantAddress);
    const offered = await send(message([text('the haiku please, on: night trains')], { taskId: asked.id, contextId: asked.contextId }));
    expect([offered.id, offered.status?.state, offered.metadata]).toEqual([asked.id, TaskState.TASK_STATE_INPUT_REQUIRED, { skill: 'haiku' }]);
    const paid = await pay(offered, 3);
    expect(paid.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(paid.artifacts.flatMap((a) => a.parts.map((p) => p.content?.value))).toEqual([expect.stringMatching(/^night trains, once more/)]);
    expect(await balanceOf(chain, usdc, merchantAddress)).toBe(before + HAIKU_PRICE);
  });

  it('asks again when the text names two skills, listing only those, and refuses an unknown metadata.skillId the same way', async () => {
    const ambiguous = await send(message([text('a haiku or a forecast, whichever')]));
    expect(ambiguous.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect((ambiguous.status?.message?.metadata?.skills as { id: string }[]).map((s) => s.id)).toEqual(['forecast', 'haiku']);
    expect(statusText(ambiguous)).toContain('This message names more than one skill (forecast, haiku)');

    const unknown = await send(message([text('forecast Porto')], { metadata: { skillId: 'dance' } }));
    expect(unknown.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(unknown)).toContain('Its metadata.skillId names "dance", which is not a skill of this agent');
  });

  it('takes the skill from a data part on the wire, and still wants the x402 extension for a paid one (-32008)', async () => {
    const free = await rpc(
      merchant.url,
      'SendMessage',
      { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ data: { skill: 'ping' } }] } },
      { 'a2a-extensions': '' },
    );
    expect(free.body.result.message).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'pong' }] });

    const paid = await rpc(merchant.url, 'SendMessage', {
      message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ data: { skillId: 'forecast', input: 'Braga' } }] },
    });
    expect(paid.body.result.task.status.message.metadata['x402.payment.required']).toMatchObject({ resource: { description: 'Weather forecast: Braga' } });

    const unactivated = await rpc(
      merchant.url,
      'SendMessage',
      { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'a forecast please' }] } },
      { 'a2a-extensions': '' },
    );
    expect(unactivated.body.error).toMatchObject({ code: -32008, message: expect.stringContaining('skill forecast is paid') });
  });
});
