import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createWalletClient, http, parseEther, type Address, type Hex, type PrivateKeyAccount } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { sessionEscrowAbi } from '@mp/chain';
import {
  CHANNEL_EVENT_JOB_OPTIONS,
  CHANNEL_EVENTS_QUEUE,
  channelEventJobId,
  channelEventMessageSchema,
  type ChannelEventMessage,
  type ChannelSnapshot,
} from '@mp/clients';
import { EvmSessionChannelClient, type BuyerChannel } from '@mp/clients/evm-session';
import { normalizeEvmSessionRequest } from '@mp/mpp';
import { testChain } from '../../../../test/support/chain';

const MOCK_USDC_MINT = [
  { type: 'function', name: 'mint', stateMutability: 'nonpayable', inputs: [{ type: 'address' }, { type: 'uint256' }], outputs: [] },
] as const;

/**
 * Payment channels that really exist on the e2e anvil: a fresh payer (funded with ether and minted USDC) opens them
 * with the buyer client, a fresh payee settles and closes them with its own key, as the facilitator will. Fresh keys
 * keep other specs' nonces and ChannelOpened logs out of the way.
 */
export class AnvilChannels {
  readonly payer: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey());
  readonly payee: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey());
  readonly chain = testChain();
  readonly escrow = this.chain.manifest.contracts.sessionEscrow.toLowerCase() as Address;
  readonly token = this.chain.manifest.tokens.usdc.address.toLowerCase() as Address;
  readonly network = this.chain.manifest.network;
  readonly buyer: EvmSessionChannelClient;

  constructor() {
    this.buyer = new EvmSessionChannelClient(this.chain.client, { address: this.payer.address, signer: this.payer, wallet: this.wallet(this.payer) });
  }

  /** Ether for both keys and `usdc` atomic units for the payer, minted by the token's owner (the deployer). */
  async fund(usdc: bigint): Promise<void> {
    for (const who of [this.payer.address, this.payee.address])
      await this.chain.client.request({ method: 'anvil_setBalance' as never, params: [who, `0x${parseEther('10').toString(16)}`] as never });
    const deployer = privateKeyToAccount(this.chain.manifest.accounts.deployer.privateKey as Hex);
    await this.send(deployer, this.token, MOCK_USDC_MINT, 'mint', [this.payer.address, usdc]);
  }

  async open(deposit: bigint): Promise<{ channel: BuyerChannel; txHash: Hex }> {
    const request = normalizeEvmSessionRequest({
      amount: '10',
      currency: this.token,
      recipient: this.payee.address,
      suggestedDeposit: deposit.toString(),
      methodDetails: { chainId: this.chain.manifest.chainId, escrowContract: this.escrow, credentialTypes: ['hash'] },
    });
    const { channel, payload } = await this.buyer.openDirect(request, { deposit });
    return { channel, txHash: payload.hash };
  }

  async topUp(channel: BuyerChannel, amount: bigint): Promise<Hex> {
    return (await this.buyer.topUpDirect(channel, amount)).hash;
  }

  /** The payee settles up to `cumulative` with the payer's voucher. */
  async settle(channel: BuyerChannel, cumulative: bigint): Promise<Hex> {
    const signature = await this.buyer.signVoucher(channel, cumulative);
    return this.send(this.payee, this.escrow, sessionEscrowAbi, 'settle', [channel.channelId, cumulative, signature]);
  }

  /** The payee closes at `cumulative`: the rest of the deposit goes back to the payer. */
  async close(channel: BuyerChannel, cumulative: bigint): Promise<Hex> {
    const signature = await this.buyer.signVoucher(channel, cumulative);
    return this.send(this.payee, this.escrow, sessionEscrowAbi, 'close', [channel.channelId, cumulative, signature]);
  }

  read(channelId: Hex) {
    return this.chain.client.readContract({ address: this.escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] });
  }

  private wallet(account: PrivateKeyAccount) {
    return createWalletClient({ account, chain: this.chain.client.chain!, transport: http(this.chain.manifest.rpcUrl) });
  }

  private async send(account: PrivateKeyAccount, address: Address, abi: any, functionName: string, args: readonly unknown[]): Promise<Hex> {
    const { request } = await this.chain.client.simulateContract({ account, address, abi, functionName, args } as never);
    const hash = await this.wallet(account).writeContract(request as never);
    const receipt = await this.chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success') throw new Error(`${functionName} ${hash} reverted`);
    return hash;
  }
}

/** Event ids above any earlier run's: outbox ids are unique forever, and job ids are made of them. */
let nextEventId = BigInt(Date.now()) * 1000n;

/**
 * Writes a channel's events as the facilitator's outbox would, each checked against the channel-events contract
 * (channelEventMessageSchema): event ids increasing, the snapshot carried forward.
 */
export class ChannelEventFeed {
  readonly snapshot: ChannelSnapshot;

  constructor(
    anvil: AnvilChannels,
    channelId: string,
    merchantId: string | null,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.snapshot = {
      channelId: channelId.toLowerCase(),
      merchantId,
      network: anvil.network,
      escrow: anvil.escrow,
      asset: anvil.token,
      payer: anvil.payer.address.toLowerCase(),
      payee: anvil.payee.address.toLowerCase(),
      deposit: '0',
      acceptedCumulative: '0',
      spent: '0',
      settled: '0',
      state: 'open',
    };
  }

  opened(deposit: bigint, txHash: Hex): ChannelEventMessage {
    this.snapshot.deposit = deposit.toString();
    return this.event('channel.opened', { deposit: deposit.toString(), txHash: txHash.toLowerCase() });
  }

  toppedUp(amount: bigint, txHash: Hex): ChannelEventMessage {
    this.snapshot.deposit = (BigInt(this.snapshot.deposit) + amount).toString();
    return this.event('channel.topped_up', { amount: amount.toString(), deposit: this.snapshot.deposit, txHash: txHash.toLowerCase() });
  }

  voucher(cumulative: bigint): ChannelEventMessage {
    const delta = cumulative - BigInt(this.snapshot.acceptedCumulative);
    this.snapshot.acceptedCumulative = cumulative.toString();
    return this.event('channel.voucher_accepted', { delta: delta.toString(), acceptedCumulative: cumulative.toString() });
  }

  spent(chargeId: string, amount: bigint): ChannelEventMessage {
    this.snapshot.spent = (BigInt(this.snapshot.spent) + amount).toString();
    return this.event('channel.spent', { chargeId, amount: amount.toString(), spent: this.snapshot.spent });
  }

  settled(total: bigint, txHash: Hex): ChannelEventMessage {
    const delta = total - BigInt(this.snapshot.settled);
    this.snapshot.settled = total.toString();
    return this.event('channel.settled', { delta: delta.toString(), settled: total.toString(), txHash: txHash.toLowerCase() });
  }

  closeRequested(graceEndsAt: Date, txHash: Hex): ChannelEventMessage {
    this.snapshot.state = 'closing';
    return this.event('channel.close_requested', { graceEndsAt: graceEndsAt.toISOString(), txHash: txHash.toLowerCase() });
  }

  closed(txHash: Hex, by: 'close' | 'withdraw' = 'close'): ChannelEventMessage {
    this.snapshot.state = 'closed';
    const refunded = BigInt(this.snapshot.deposit) - BigInt(this.snapshot.settled);
    return this.event('channel.closed', { by, refunded: refunded.toString(), settled: this.snapshot.settled, txHash: txHash.toLowerCase() });
  }

  private event(type: ChannelEventMessage['type'], data: Record<string, string>): ChannelEventMessage {
    nextEventId += 1n;
    return channelEventMessageSchema.parse({
      eventId: nextEventId.toString(),
      type,
      occurredAt: this.clock().toISOString(),
      data,
      channel: { ...this.snapshot },
    });
  }
}

/** The `channel-events` queue as the facilitator publishes on it (its job ids and options), under the ledger's prefix. */
export class ChannelEventsPublisher {
  private readonly redis: Redis;
  readonly queue: Queue;

  constructor(redisUrl: string, prefix: string) {
    this.redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    this.queue = new Queue(CHANNEL_EVENTS_QUEUE, { connection: this.redis, prefix });
  }

  async publish(...events: unknown[]): Promise<void> {
    for (const event of events) {
      const { eventId, channel, type } = event as { eventId: string; channel: { channelId: string }; type: string };
      await this.queue.add(type, event, { ...CHANNEL_EVENT_JOB_OPTIONS, jobId: channelEventJobId(eventId, channel.channelId) });
    }
  }

  /** A message as it is, under a job id of its own: what a facilitator breaking the contract would publish. */
  async publishRaw(jobId: string, message: unknown): Promise<void> {
    await this.queue.add('malformed', message, { ...CHANNEL_EVENT_JOB_OPTIONS, jobId });
  }

  async close(): Promise<void> {
    await this.queue.close();
    this.redis.disconnect();
  }
}
