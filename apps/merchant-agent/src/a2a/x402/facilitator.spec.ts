import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequirements } from '@x402/core/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithTimeout } from '../../facilitator-fetch';
import { settlePayment, verifyPayment, X402FacilitatorClient } from './facilitator';

const requirements = {
  scheme: 'exact',
  network: 'eip155:31337',
  amount: '10000',
  asset: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  maxTimeoutSeconds: 60,
  extra: {},
} as PaymentRequirements;
const payload = { x402Version: 2, accepted: requirements, payload: { signature: '0x01' } } as unknown as PaymentPayload;

/** A facilitator that answers what each test sets, and records what it was sent. */
let answer: (req: IncomingMessage, body: string) => { status: number; body: string; delayMs?: number };
const seen: { method: string; url: string; authorization?: string; body: string }[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
      const reply = answer(req, body);
      setTimeout(() => res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body), reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('X402FacilitatorClient (the wire of @x402/core HTTPFacilitatorClient)', () => {
  const client = () => new X402FacilitatorClient({ url, apiKey: 'mpk_key', fetch: fetchWithTimeout(500) });

  it('posts the x402 envelope with the API key and returns the verdict', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ isValid: true, payer: '0xabc' }) });
    await expect(client().verify(payload, requirements)).resolves.toEqual({ isValid: true, payer: '0xabc' });
    const sent = seen.at(-1)!;
    expect(sent).toMatchObject({ method: 'POST', url: '/verify', authorization: 'Bearer mpk_key' });
    expect(JSON.parse(sent.body)).toEqual({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements });

    answer = () => ({ status: 200, body: JSON.stringify({ success: false, errorReason: 'insufficient_funds', transaction: '', network: 'eip155:31337' }) });
    await expect(client().settle(payload, requirements)).resolves.toMatchObject({ success: false, errorReason: 'insufficient_funds' });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/settle' });
  });

  it('throws VerifyError and SettleError for an HTTP error that carries a verdict, an Error for any other', async () => {
    answer = () => ({ status: 400, body: JSON.stringify({ isValid: false, invalidReason: 'invalid_payload' }) });
    await expect(client().verify(payload, requirements)).rejects.toBeInstanceOf(VerifyError);
    answer = () => ({ status: 409, body: JSON.stringify({ success: false, errorReason: 'x', transaction: '', network: 'eip155:31337' }) });
    await expect(client().settle(payload, requirements)).rejects.toBeInstanceOf(SettleError);
    answer = () => ({ status: 401, body: JSON.stringify({ type: 'about:blank', code: 'unauthorized', detail: 'a valid API key is required' }) });
    await expect(client().settle(payload, requirements)).rejects.toThrow('the facilitator answered /settle with 401: {"type"');
    answer = () => ({ status: 200, body: 'not json' });
    await expect(client().verify(payload, requirements)).rejects.toThrow('the facilitator answered /verify with 200: not json');
  });

  it('reads /supported', async () => {
    answer = () => ({
      status: 200,
      body: JSON.stringify({ kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:31337' }], extensions: [], signers: {} }),
    });
    await expect(client().getSupported()).resolves.toMatchObject({ kinds: [{ scheme: 'exact' }] });
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/supported', body: '' });
  });

  it('gives up after its timeout: verification fails, a settlement is an unknown outcome', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ isValid: true }), delayMs: 1_000 });
    const verified = await verifyPayment(client(), payload, requirements);
    expect(verified).toMatchObject({ isValid: false, invalidReason: 'unexpected_verify_error' });
    answer = () => ({ status: 200, body: JSON.stringify({ success: true, transaction: '0x1', network: 'eip155:31337' }), delayMs: 1_000 });
    const settled = await settlePayment(client(), payload, requirements, 1);
    expect(settled).toMatchObject({ success: false, errorReason: 'unexpected_settle_error' });
  });
});
