import { x402Client } from '@x402/core/client';
import type { PaymentRequired } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { X402_EXTENSION_URIS } from '../src/a2a/x402/extension';
import { rpc, startA2aMerchant, userMessage, X402_V02, type RunningMerchant } from './a2a-merchant';

const STATUS = 'x402.payment.status';

/**
 * Checks in the spirit of the A2A TCK (which cannot run here, reference §5): the card, versioning, JSON-RPC and REST
 * errors, task states over blocking, non-blocking and streaming sends, history and listing.
 */
describe('A2A merchant agent: protocol conformance', () => {
  const { manifest } = testChain();
  let facilitator: RunningFacilitator;
  let merchant: RunningMerchant;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    merchant = await startA2aMerchant({ FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: '3000' });
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  const wallet = new x402Client()
    .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, 2))))
    .setSpendControls(false);
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${merchant.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'a2a-extensions': X402_V02, ...headers },
      body,
    });
  const open = async () => (await rpc(merchant.url, 'SendMessage', { message: userMessage('forecast Tavira') })).body.result.task;
  const paymentMessage = async (task: any) =>
    userMessage('paying', {
      taskId: task.id,
      contextId: task.contextId,
      metadata: {
        [STATUS]: 'payment-submitted',
        'x402.payment.payload': await wallet.createPaymentPayload(task.status.message.metadata['x402.payment.required'] as PaymentRequired),
      },
    });
  /** The events of an SSE stream, as JSON-RPC results. */
  const sse = async (response: Response) =>
    (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice('data: '.length)).result);

  describe('agent card', () => {
    it('serves the v1.0 card: interfaces of both bindings in 1.0 and 0.3, streaming, the x402 extension under both URIs, priced skills', async () => {
      const response = await fetch(`${merchant.url}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('cache-control')).toMatch(/max-age=\d+/);
      const card = (await response.json()) as any;
      expect(card).toMatchObject({
        name: expect.any(String),
        description: expect.any(String),
        version: '0.1.0',
        defaultInputModes: ['text/plain'],
        defaultOutputModes: expect.any(Array),
      });
      expect(card.supportedInterfaces).toEqual([
        { url: `${merchant.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
        { url: `${merchant.url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
        { url: `${merchant.url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
        { url: `${merchant.url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3', tenant: '' },
      ]);
      expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false });
      expect(card.capabilities.extensions.map((e: any) => [e.uri, e.required ?? false])).toEqual([
        [X402_EXTENSION_URIS.v02, false],
        [X402_EXTENSION_URIS.v01, false],
      ]);
      expect(card.capabilities.extensions[0].params).toMatchObject({
        x402Version: 2,
        prices: { forecast: { amount: '3000', network: manifest.network, settle: 'before-work' }, haiku: { settle: 'after-work' } },
      });
      expect(card.skills.map((s: any) => s.id)).toEqual(['forecast', 'haiku', 'ping']);
      for (const skill of card.skills) expect(skill).toMatchObject({ name: expect.any(String), description: expect.any(String), tags: expect.any(Array) });

      // An explicit Cache-Control: fetch would add no-cache to a conditional request, which asks for the card anew.
      const again = await fetch(`${merchant.url}/.well-known/agent-card.json`, {
        headers: { 'a2a-version': '1.0', 'if-none-match': response.headers.get('etag')!, 'cache-control': 'max-age=0' },
      });
      expect(again.status).toBe(304);
    });

    it('serves a v0.3 card to a client that names no version', async () => {
      const response = await fetch(`${merchant.url}/.well-known/agent-card.json`);
      expect(response.headers.get('vary')).toMatch(/A2A-Version/i);
      expect(await response.json()).toMatchObject({
        protocolVersion: '0.3',
        url: `${merchant.url}/a2a/jsonrpc`,
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: true, extensions: [{ uri: X402_EXTENSION_URIS.v02 }, { uri: X402_EXTENSION_URIS.v01 }] },
      });
    });
  });

  describe('versions and errors', () => {
    it('reads a missing A2A-Version as 0.3 and refuses one it does not speak (-32009)', async () => {
      const unversioned = await rpc(merchant.url, 'GetTask', { id: 'none' }, { 'a2a-version': '' });
      expect(unversioned.body.error.code).toBe(-32601); // a v1.0 method name on the v0.3 binding
      const legacy = await rpc(merchant.url, 'tasks/get', { id: 'none' }, { 'a2a-version': '' });
      expect(legacy.body.error.code).toBe(-32001);
      const future = await rpc(merchant.url, 'GetTask', { id: 'none' }, { 'a2a-version': '9.0' });
      expect(future.body.error.code).toBe(-32009);
      const rest = await fetch(`${merchant.url}/a2a/rest/tasks/none`, { headers: { 'a2a-version': '9.0' } });
      expect(rest.status).toBe(400);
    });

    it('answers the JSON-RPC error codes', async () => {
      const codeOf = async (body: string, headers?: Record<string, string>) => {
        const response = await post('/a2a/jsonrpc', body, headers);
        expect(response.status).toBe(200);
        return ((await response.json()) as { error: { code: number } }).error.code;
      };
      const call = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 7, method, params });
      expect(await codeOf('{"jsonrpc": "2.0", "id": 7, "method": ')).toBe(-32700);
      // Not -32600: the SDK answers a request that is not JSON-RPC 2.0 as malformed, like bad params.
      expect(await codeOf(JSON.stringify({ id: 7, method: 'GetTask', params: { id: 'x' } }))).toBe(-32602);
      expect(await codeOf(call('DanceTask', { id: 'x' }))).toBe(-32601);
      expect(await codeOf(call('SendMessage', { configuration: {} }))).toBe(-32602);
      expect(await codeOf(call('SendMessage', { message: { role: 'ROLE_USER', parts: [{ text: 'ping' }] } }))).toBe(-32602); // no messageId
      expect(await codeOf(call('GetTask', { id: 'x' }), { 'content-type': 'text/plain' })).toBe(-32005);
      expect(await codeOf(call('GetTask', { id: crypto.randomUUID() }))).toBe(-32001);
      expect(await codeOf(call('CancelTask', { id: crypto.randomUUID() }))).toBe(-32001);
      expect(await codeOf(call('CreateTaskPushNotificationConfig', { taskId: 'x', url: 'http://127.0.0.1:1/hook' }))).toBe(-32003);

      const { body } = await rpc(merchant.url, 'GetTask', { id: 'missing' });
      expect(body.error.data).toEqual([
        expect.objectContaining({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }),
      ]);
    });

    it("refuses a follow-up whose contextId is not its task's (-32602)", async () => {
      const task = await open();
      const { body } = await rpc(merchant.url, 'SendMessage', { message: userMessage('again', { taskId: task.id, contextId: crypto.randomUUID() }) });
      expect(body.error.code).toBe(-32602);
    });

    it('answers REST with HTTP statuses: 404 for an unknown task, 400 for a paid skill without the extension', async () => {
      const missing = await fetch(`${merchant.url}/a2a/rest/tasks/${crypto.randomUUID()}`, { headers: { 'a2a-version': '1.0' } });
      expect(missing.status).toBe(404);
      expect(await missing.json()).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
      const unpaid = await post('/a2a/rest/message:send', JSON.stringify({ message: userMessage('haiku') }), {
        'content-type': 'application/a2a+json',
        'a2a-extensions': '',
      });
      expect(unpaid.status).toBe(400);
      expect(await unpaid.json()).toMatchObject({
        error: { status: 'FAILED_PRECONDITION', details: [expect.objectContaining({ reason: 'EXTENSION_SUPPORT_REQUIRED' })] },
      });
    });
  });

  describe('task states', () => {
    it('streams a paid task: input-required closes the first stream; the payment streams working, verified, the artifact, completed', async () => {
      const ask = await sse(
        await post(
          '/a2a/jsonrpc',
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: { message: userMessage('forecast Sagres') } }),
        ),
      );
      expect(ask.map((e) => Object.keys(e)[0])).toEqual(['task']);
      const task = ask[0].task;
      expect(task.status).toMatchObject({
        state: 'TASK_STATE_INPUT_REQUIRED',
        message: { extensions: [X402_V02], metadata: { [STATUS]: 'payment-required' } },
      });

      const response = await post(
        '/a2a/jsonrpc',
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'SendStreamingMessage', params: { message: await paymentMessage(task) } }),
      );
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('a2a-extensions')).toBe(X402_V02);
      const events = await sse(response);
      expect(events.map((e) => [Object.keys(e)[0], e.task?.status.state ?? e.statusUpdate?.status.state ?? e.artifactUpdate?.artifact.name])).toEqual([
        ['task', 'TASK_STATE_WORKING'],
        ['statusUpdate', 'TASK_STATE_WORKING'],
        ['artifactUpdate', 'forecast'],
        ['statusUpdate', 'TASK_STATE_COMPLETED'],
      ]);
      expect(events.map((e) => (e.task ?? e.statusUpdate)?.status.message.metadata[STATUS]).filter(Boolean)).toEqual([
        'payment-submitted',
        'payment-verified',
        'payment-completed',
      ]);
    });

    it('returns at once when asked not to block, and the task completes behind it', async () => {
      const task = await open();
      const { body } = await rpc(merchant.url, 'SendMessage', { message: await paymentMessage(task), configuration: { returnImmediately: true } });
      expect(body.result.task.status.state).toBe('TASK_STATE_WORKING');
      await vi.waitFor(async () => expect((await rpc(merchant.url, 'GetTask', { id: task.id })).body.result.status.state).toBe('TASK_STATE_COMPLETED'), {
        timeout: 10_000,
        interval: 100,
      });
    });

    it('keeps the history (historyLength 0 omits it, N keeps the last N) and lists tasks by context and state, page by page', async () => {
      const task = await open();
      await rpc(merchant.url, 'SendMessage', { message: await paymentMessage(task) });
      const full = (await rpc(merchant.url, 'GetTask', { id: task.id })).body.result;
      expect(full.history.map((m: any) => [m.role, m.metadata?.[STATUS]])).toEqual([
        ['ROLE_USER', undefined],
        ['ROLE_AGENT', 'payment-required'],
        ['ROLE_USER', 'payment-submitted'],
        ['ROLE_AGENT', 'payment-submitted'],
        ['ROLE_AGENT', 'payment-verified'],
        ['ROLE_AGENT', 'payment-completed'],
      ]);
      expect((await rpc(merchant.url, 'GetTask', { id: task.id, historyLength: 0 })).body.result.history).toBeUndefined();
      expect((await rpc(merchant.url, 'GetTask', { id: task.id, historyLength: 1 })).body.result.history).toEqual([full.history.at(-1)]);

      const second = (await rpc(merchant.url, 'SendMessage', { message: userMessage('haiku tides', { contextId: task.contextId }) })).body.result.task;
      const list = (params: object) => rpc(merchant.url, 'ListTasks', { contextId: task.contextId, ...params });
      const first = (await list({ pageSize: 1 })).body.result;
      expect(first).toMatchObject({ tasks: [{ id: second.id }], totalSize: 2, pageSize: 1, nextPageToken: expect.any(String) });
      expect((await list({ pageSize: 1, pageToken: first.nextPageToken })).body.result).toMatchObject({ tasks: [{ id: task.id }], nextPageToken: '' });
      expect((await list({ status: 'TASK_STATE_COMPLETED' })).body.result.tasks.map((t: any) => t.id)).toEqual([task.id]);
      expect((await list({ pageToken: 'not-a-token' })).body.error.code).toBe(-32602);
    });
  });
});
