// streamWithSession (the buyer CLI's engine) end to end over HTTP against a minimal metered SSE seller built in this
// spec from the real pieces the facilitator/merchant integration will use: the @mp/mpp session codec, the @mp/channels
// book, voucher recovery, and escrow calls by the payee on anvil (openWithAuthorization, settle, close). The seller is
// a test harness for the buyer, not the product: the facilitator/merchant-agent integration is the next task.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createWalletClient,
  erc20Abi,
  http as viemHttp,
  parseEventLogs,
  recoverTypedDataAddress,
  zeroAddress,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { sessionEscrowAbi } from '@mp/chain';
import { acceptVoucher, applyDeposit, charge, decideClose, onChainSettled, onFinalized, openBook, settlementDue, type ChannelBook } from '@mp/channels';
import { EvmSessionChannelClient, readSse, streamWithSession } from '@mp/clients/evm-session';
import {
  checkEvmSession,
  createChallenge,
  encodeNeedVoucherEvent,
  encodeReceipt,
  encodeReceiptEvent,
  evmSessionReceipt,
  normalizeEvmSessionRequest,
  parseCredential,
  serializeChallenge,
  verifyBinding,
  voucherTypedData,
  type EvmSessionRequest,
} from '@mp/mpp';
import { startOwnChain, type OwnChain } from '../support/own-chain';
import { openWithAuthorizationArgs } from './escrow-calls';

const SECRET = 'session-stream-spec-secret-at-least-32-bytes';
const PRICE = 10n; // per token
const TOKENS = 25;

let chain: OwnChain;
let escrow: Address;
let usdc: Address;
let payee: PrivateKeyAccount;
let request: EvmSessionRequest;

beforeAll(async () => {
  chain = await startOwnChain(31_716);
  escrow = chain.manifest.contracts.sessionEscrow as Address;
  usdc = chain.manifest.tokens.usdc.address as Address;
  payee = privateKeyToAccount(chain.manifest.accounts.merchant.privateKey as Hex);
});

afterAll(async () => {
  await chain?.stop();
});

interface Seller {
  url: string;
  books: Map<string, ChannelBook & { signer: Address }>;
  settleTxs: Hex[];
  close(): Promise<void>;
}

/** The payee's escrow call; the receipt decides. */
async function payeeCall(functionName: string, args: readonly unknown[]) {
  const wallet = createWalletClient({ account: payee, chain: chain.client.chain!, transport: viemHttp(chain.manifest.rpcUrl) });
  const { request: tx } = await chain.client.simulateContract({ account: payee, address: escrow, abi: sessionEscrowAbi, functionName, args } as never);
  const hash = await wallet.writeContract(tx as never);
  const receipt = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (receipt.status !== 'success') throw new Error(`${functionName} reverted`);
  return receipt;
}

async function startSeller(credentialTypes: ('hash' | 'authorization')[], settleAbove: bigint, minVoucherDelta = '0'): Promise<Seller> {
  request = normalizeEvmSessionRequest({
    amount: PRICE.toString(),
    currency: usdc,
    recipient: payee.address,
    unitType: 'llm_token',
    suggestedDeposit: '100',
    methodDetails: { chainId: chain.manifest.chainId, escrowContract: escrow, credentialTypes, minVoucherDelta },
  });
  const books = new Map<string, ChannelBook & { signer: Address }>();
  const settleTxs: Hex[] = [];
  const challenge = () => serializeChallenge(createChallenge(SECRET, { realm: 'seller.test', method: 'evm', intent: 'session', request }));
  const domain = { chainId: chain.manifest.chainId, escrowContract: escrow };
  const verdict = async (channelId: Hex, cumulativeAmount: bigint, signature: Hex, signer: Address) =>
    (await recoverTypedDataAddress({ ...voucherTypedData(domain, { channelId, cumulativeAmount }), signature })) === signer
      ? ('valid' as const)
      : ('signer-mismatch' as const);
  const receiptFor = (book: ChannelBook, challengeId: string, txHash?: Hex) =>
    evmSessionReceipt({
      challengeId,
      channelId: book.channelId as Hex,
      acceptedCumulative: book.acceptedCumulative,
      spent: book.spent,
      chainId: chain.manifest.chainId,
      timestamp: new Date(),
      ...(txHash && { txHash }),
    });
  const readDeposit = async (channelId: Hex) =>
    (await chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] })).deposit;

  const server = http.createServer((req, res) => {
    void (async () => {
      const header = req.headers.authorization;
      if (!header) {
        res.writeHead(402, { 'www-authenticate': challenge() }).end();
        return;
      }
      const credential = parseCredential(header);
      if (!credential.ok) throw new Error(credential.error.detail);
      const bound = verifyBinding(SECRET, credential.value, { now: new Date() });
      if (!bound.ok) throw new Error(bound.error.detail);
      const checked = checkEvmSession(bound.value, credential.value.payload, credential.value.source, BigInt(await chain.now()));
      if (!checked.ok) throw new Error(checked.error.detail);
      const c = checked.value.checked;
      const challengeId = bound.value.id;
      let book = books.get(c.channelId);
      const keep = (next: ChannelBook) => {
        book = { ...next, signer: book!.signer };
        books.set(c.channelId, book);
      };

      if (c.action === 'open') {
        let signer: Address;
        if (c.type === 'hash') {
          const tx = await chain.client.getTransactionReceipt({ hash: c.hash });
          const opened = parseEventLogs({ abi: sessionEscrowAbi, logs: tx.logs, eventName: 'ChannelOpened' });
          if (tx.status !== 'success' || opened[0]?.args.channelId !== c.channelId) throw new Error('the open transaction did not open this channel');
          signer = c.terms.authorizedSigner === zeroAddress ? c.terms.payer : c.terms.authorizedSigner;
        } else {
          const d = c.deposit;
          await payeeCall('openWithAuthorization', openWithAuthorizationArgs(d));
          signer = d.terms.authorizedSigner === zeroAddress ? d.terms.payer : d.terms.authorizedSigner;
        }
        if ((await verdict(c.channelId, c.cumulativeAmount, c.voucherSignature, signer)) !== 'valid') throw new Error('bad initial voucher');
        book = { ...openBook({ channelId: c.channelId, deposit: await readDeposit(c.channelId), minVoucherDelta: BigInt(minVoucherDelta) }), signer };
        books.set(c.channelId, book);
        // the metered stream: spent is recorded in the book before each token goes out
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          'payment-receipt': encodeReceipt(receiptFor(book, challengeId)),
        });
        for (let i = 0; i < TOKENS;) {
          const result = charge(books.get(c.channelId)!, PRICE);
          if (result.kind === 'delivered') {
            keep(result.book);
            res.write(`event: message\ndata: token-${i}\n\n`);
            i += 1;
            continue;
          }
          if (result.kind === 'refused') throw new Error(result.detail);
          const before = books.get(c.channelId)!.acceptedCumulative;
          res.write(encodeNeedVoucherEvent({ channelId: c.channelId, ...result }));
          for (let waited = 0; books.get(c.channelId)!.acceptedCumulative === before; waited += 20) {
            if (waited > 10_000) throw new Error('no voucher came');
            await new Promise((r) => setTimeout(r, 20));
          }
        }
        res.end(encodeReceiptEvent(receiptFor(books.get(c.channelId)!, challengeId)));
        return;
      }
      if (!book) throw new Error('unknown channel');

      if (c.action === 'topUp') {
        if (c.type === 'hash') {
          const tx = await chain.client.getTransactionReceipt({ hash: c.hash });
          if (tx.status !== 'success') throw new Error('top-up reverted');
        } else {
          const t = c.deposit;
          await payeeCall('topUpWithAuthorization', [t.channelId, t.additionalDeposit, t.from, t.topUpSalt, t.validAfter, t.validBefore, t.nonce, t.signature]);
        }
        const updated = applyDeposit(book, await readDeposit(c.channelId));
        if (updated.kind !== 'updated') throw new Error(updated.detail);
        keep(updated.book);
        res.writeHead(204).end();
        return;
      }
      if (c.action === 'voucher') {
        const result = acceptVoucher(book, {
          cumulativeAmount: c.cumulativeAmount,
          signature: c.voucherSignature,
          verdict: await verdict(c.channelId, c.cumulativeAmount, c.voucherSignature, book.signer),
          at: new Date(),
        });
        if (result.kind === 'refused') {
          res.writeHead(402, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ detail: result.detail }));
          return;
        }
        keep(result.book);
        if (settlementDue(book!, { minUnsettled: settleAbove, maxAgeMs: 60_000 }, new Date())) {
          const settled = await payeeCall('settle', [c.channelId, book!.acceptedCumulative, book!.acceptedSignature]);
          settleTxs.push(settled.transactionHash);
          keep(onChainSettled(books.get(c.channelId)!, book!.acceptedCumulative));
        }
        res.writeHead(204, { 'payment-receipt': encodeReceipt(receiptFor(book!, challengeId)) }).end();
        return;
      }
      // close
      const decision = decideClose(book, {
        cumulativeAmount: c.cumulativeAmount,
        signature: c.voucherSignature,
        verdict: await verdict(c.channelId, c.cumulativeAmount, c.voucherSignature, book.signer),
        at: new Date(),
      });
      if (decision.kind !== 'close') throw new Error(decision.detail);
      const closed = await payeeCall('close', [c.channelId, decision.cumulativeAmount, decision.signature ?? '0x']);
      const event = parseEventLogs({ abi: sessionEscrowAbi, logs: closed.logs, eventName: 'ChannelClosed' })[0]!;
      keep(onFinalized(decision.book, { settledToPayee: event.args.settledToPayee, refundedToPayer: event.args.refundedToPayer }));
      res.writeHead(204, { 'payment-receipt': encodeReceipt(receiptFor(book!, challengeId, closed.transactionHash)) }).end();
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
      else res.end(`event: error\ndata: ${JSON.stringify(String(error))}\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`,
    books,
    settleTxs,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const balance = (who: Address) => chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [who] });

describe('streamWithSession over HTTP + SSE, settled on anvil', () => {
  it.each([
    ['hash', 4],
    ['authorization', 5],
  ] as const)('opens by %s, answers payment-need-voucher with vouchers (topping up), and closes at spent', async (mode, payerIndex) => {
    const seller = await startSeller([mode], 60n);
    try {
      const account = privateKeyToAccount(chain.manifest.accounts.payers[payerIndex]!.privateKey as Hex);
      const wallet = createWalletClient({ account, chain: chain.client.chain!, transport: viemHttp(chain.manifest.rpcUrl) });
      const client = new EvmSessionChannelClient(chain.client, { address: account.address, signer: account, wallet });
      const [payerStart, payeeStart] = [await balance(account.address), await balance(payee.address)];
      const messages: string[] = [];
      const events: string[] = [];
      const result = await streamWithSession(seller.url, { client, onMessage: (m) => messages.push(m), onEvent: (e) => events.push(e.kind) });
      // 25 tokens at 10 = 250 delivered on a 100 deposit: two top-ups of 100 on the way
      expect(messages).toEqual(Array.from({ length: TOKENS }, (_, i) => `token-${i}`));
      expect(events.filter((e) => e === 'topUp')).toHaveLength(2);
      expect(result.receipt).toMatchObject({ spent: '250', acceptedCumulative: '250', channelId: result.channel.channelId });
      expect(result.closeReceipt?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(seller.settleTxs.length).toBeGreaterThan(0);
      const book = seller.books.get(result.channel.channelId)!;
      expect(book).toMatchObject({ finalized: true, spent: 250n, settledOnChain: 250n, deposit: 300n });
      expect(await balance(payee.address)).toBe(payeeStart + 250n);
      expect(await balance(account.address)).toBe(payerStart - 250n);
    } finally {
      await seller.close();
    }
  });

  it('steps vouchers by minVoucherDelta, and still closes at what was delivered', async () => {
    const seller = await startSeller(['hash'], 1_000n, '40');
    try {
      const account = privateKeyToAccount(chain.manifest.accounts.payers[6]!.privateKey as Hex);
      const wallet = createWalletClient({ account, chain: chain.client.chain!, transport: viemHttp(chain.manifest.rpcUrl) });
      const client = new EvmSessionChannelClient(chain.client, { address: account.address, signer: account, wallet });
      const payeeStart = await balance(payee.address);
      const vouchers: string[] = [];
      const result = await streamWithSession(seller.url, {
        client,
        deposit: 1_000n,
        onEvent: (e) => e.kind === 'voucher' && vouchers.push(String(e.detail.cumulativeAmount)),
      });
      // every step is 40 (four tokens) although each need is for one more token of 10
      expect(vouchers).toEqual(['40', '80', '120', '160', '200', '240', '280']);
      expect(result.receipt).toMatchObject({ spent: '250', acceptedCumulative: '280' });
      expect(await balance(payee.address)).toBe(payeeStart + 250n);
    } finally {
      await seller.close();
    }
  });

  it('reads SSE frames split anywhere, with CRLF, comments and multi-line data', async () => {
    const text = ': hello\r\nevent: payment-need-voucher\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: plain\n\nevent: x\ndata: unterminated';
    for (const size of [1, 3, 7, text.length]) {
      const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => new TextEncoder().encode(text.slice(i * size, (i + 1) * size)));
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
      const events = [];
      for await (const event of readSse(body)) events.push(event);
      expect(events).toEqual([
        { event: 'payment-need-voucher', data: '{"a":\n1}' },
        { event: 'message', data: 'plain' },
      ]);
    }
  });
});
