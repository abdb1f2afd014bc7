import type { Hex } from 'viem';
import {
  decodeReceipt,
  parseEvmSessionReceipt,
  parseNeedVoucher,
  parseWwwAuthenticateLines,
  PAYMENT_NEED_VOUCHER_EVENT,
  PAYMENT_RECEIPT_EVENT,
  PAYMENT_RECEIPT_HEADER,
  serializeCredential,
  SESSION_INTENT,
  type Challenge,
  type EvmSessionReceipt,
  type EvmSessionRequest,
} from '@mp/mpp';
import { EvmSessionChannelClient, SessionClientError, type BuyerChannel } from './channel-client';
import { readSse } from './sse';

export interface SessionStreamOptions {
  client: EvmSessionChannelClient;
  /** the deposit to open with (default: the request's suggestedDeposit) */
  deposit?: bigint;
  /** how to open: `authorization` (relayed, the server pays gas) when the challenge accepts it, else `hash` */
  open?: 'hash' | 'authorization';
  /** the most this session may ever authorize (cumulative); past it the client stops signing and closes */
  maxCumulative?: bigint;
  /** what a top-up adds when a voucher would exceed the deposit (default: the opening deposit) */
  topUpAmount?: bigint;
  /** close the channel cooperatively when the stream ends (default true) */
  close?: boolean;
  onMessage?: (data: string) => void;
  onEvent?: (event: { kind: 'opened' | 'voucher' | 'topUp' | 'receipt' | 'closed'; detail: Record<string, unknown> }) => void;
  fetch?: typeof fetch;
}

export interface SessionStreamResult {
  channel: BuyerChannel;
  messages: number;
  /** the last receipt of the stream, then of the close (with its txHash) */
  receipt: EvmSessionReceipt | undefined;
  closeReceipt: EvmSessionReceipt | undefined;
}

const sessionChallenge = (response: Response): Challenge => {
  const lines: string[] = [];
  response.headers.forEach((value, name) => {
    if (name.toLowerCase() === 'www-authenticate') lines.push(value);
  });
  const parsed = parseWwwAuthenticateLines(lines);
  if (!parsed.ok) throw new SessionClientError(`402 without a usable Payment challenge: ${parsed.error.detail}`);
  const challenge = parsed.value.find((c) => c.method === 'evm' && c.intent === SESSION_INTENT);
  if (!challenge) throw new SessionClientError(`the server offers no evm session (offers: ${parsed.value.map((c) => `${c.method}/${c.intent}`).join(', ')})`);
  return challenge;
};

const receiptOf = (response: Response): EvmSessionReceipt | undefined => {
  const header = response.headers.get(PAYMENT_RECEIPT_HEADER);
  if (!header) return undefined;
  const decoded = decodeReceipt(header);
  if (!decoded.ok) throw new SessionClientError(`unreadable Payment-Receipt: ${decoded.error.detail}`);
  const receipt = parseEvmSessionReceipt(decoded.value);
  if (!receipt.ok) throw new SessionClientError(`not an evm session receipt: ${receipt.error.detail}`);
  return receipt.value;
};

/**
 * A metered SSE resource paid through an MPP evm session, as mppx's Tempo session transport does it: GET with
 * `Accept: text/event-stream`; on 402 open a channel and retry with the open credential; answer each
 * `payment-need-voucher` with a voucher (topping up first when it would exceed the deposit) POSTed to the same URL;
 * keep the last receipt; at the end POST the close credential (close = spent of the last receipt).
 */
export async function streamWithSession(url: string, options: SessionStreamOptions): Promise<SessionStreamResult> {
  const doFetch = options.fetch ?? fetch;
  const first = await doFetch(url, { headers: { accept: 'text/event-stream' } });
  if (first.status !== 402) throw new SessionClientError(`expected 402 Payment Required from ${url}, got ${first.status}`);
  await first.body?.cancel();
  let challenge = sessionChallenge(first);
  const request: EvmSessionRequest = EvmSessionChannelClient.parseRequest(challenge.request);
  const accepted = request.methodDetails.credentialTypes ?? ['hash'];
  const mode = options.open ?? (accepted.includes('authorization') ? 'authorization' : 'hash');
  if (!accepted.includes(mode)) throw new SessionClientError(`the challenge does not accept ${mode} opens (accepts ${accepted.join(', ')})`);
  const deposit = options.deposit ?? (request.suggestedDeposit !== undefined ? BigInt(request.suggestedDeposit) : undefined);
  if (deposit === undefined) throw new SessionClientError('the challenge suggests no deposit: pass one');

  const opened = mode === 'hash' ? await options.client.openDirect(request, { deposit }) : await options.client.openRelayed(request, { deposit });
  const { channel } = opened;
  options.onEvent?.({ kind: 'opened', detail: { channelId: channel.channelId, deposit: deposit.toString(), mode } });

  const authorization = (payload: unknown, source?: string) => serializeCredential({ challenge, payload, ...(source !== undefined && { source }) });

  /** POSTs a credential to the resource; on 402 retries once with the fresh challenge (mppx does the same). */
  const post = async (payload: unknown, source?: string): Promise<Response> => {
    let response = await doFetch(url, { method: 'POST', headers: { authorization: authorization(payload, source) } });
    if (response.status === 402) {
      await response.body?.cancel();
      challenge = sessionChallenge(response);
      response = await doFetch(url, { method: 'POST', headers: { authorization: authorization(payload, source) } });
    }
    if (!response.ok) {
      const detail = await response.text();
      throw new SessionClientError(`the server refused the credential: ${response.status} ${detail.slice(0, 500)}`);
    }
    return response;
  };

  let receipt: EvmSessionReceipt | undefined;
  let messages = 0;
  const topUpAmount = options.topUpAmount ?? deposit;
  const maxCumulative = options.maxCumulative;
  const minVoucherDelta = BigInt(request.methodDetails.minVoucherDelta ?? '0');

  const stream = await doFetch(url, { headers: { accept: 'text/event-stream', authorization: authorization(opened.payload, opened.source) } });
  if (!stream.ok || !stream.body) throw new SessionClientError(`the paid request failed: ${stream.status} ${(await stream.text()).slice(0, 500)}`);
  receipt = receiptOf(stream) ?? receipt;
  for await (const event of readSse(stream.body)) {
    if (event.event === PAYMENT_NEED_VOUCHER_EVENT) {
      const need = parseNeedVoucher(event.data);
      if (!need.ok) throw new SessionClientError(need.error.detail);
      if (need.value.channelId !== channel.channelId)
        throw new SessionClientError(`payment-need-voucher for channel ${need.value.channelId}, ours is ${channel.channelId}`);
      // at least the step the server asks for (minVoucherDelta), or it would refuse the voucher as too small
      const needed = BigInt(need.value.requiredCumulative);
      const minStep = BigInt(need.value.acceptedCumulative) + minVoucherDelta;
      const required = needed > minStep ? needed : minStep;
      if (maxCumulative !== undefined && required > maxCumulative) break;
      channel.deposit = BigInt(need.value.deposit) > channel.deposit ? BigInt(need.value.deposit) : channel.deposit;
      if (required > channel.deposit) {
        const add = required - channel.deposit > topUpAmount ? required - channel.deposit : topUpAmount;
        const topUp = mode === 'hash' ? await options.client.topUpDirect(channel, add) : await options.client.topUpRelayed(channel, add);
        await (await post(topUp, mode === 'hash' ? opened.source : undefined)).body?.cancel();
        if (mode === 'authorization') channel.deposit += add;
        options.onEvent?.({ kind: 'topUp', detail: { additionalDeposit: add.toString(), deposit: channel.deposit.toString() } });
      }
      const voucherResponse = await post(await options.client.voucher(channel, required));
      receipt = receiptOf(voucherResponse) ?? receipt;
      await voucherResponse.body?.cancel();
      options.onEvent?.({ kind: 'voucher', detail: { cumulativeAmount: required.toString() } });
    } else if (event.event === PAYMENT_RECEIPT_EVENT) {
      const parsed = parseEvmSessionReceipt(JSON.parse(event.data));
      if (!parsed.ok) throw new SessionClientError(parsed.error.detail);
      receipt = parsed.value;
      options.onEvent?.({ kind: 'receipt', detail: { ...receipt } });
    } else {
      messages += 1;
      options.onMessage?.(event.data);
    }
  }

  let closeReceipt: EvmSessionReceipt | undefined;
  if (options.close !== false) {
    const basis = receipt ?? { channelId: channel.channelId as Hex, spent: '0' };
    const closed = await post(await options.client.close(channel, basis));
    closeReceipt = receiptOf(closed);
    await closed.body?.cancel();
    options.onEvent?.({ kind: 'closed', detail: { ...(closeReceipt ?? {}) } });
  }
  return { channel, messages, receipt, closeReceipt };
}
