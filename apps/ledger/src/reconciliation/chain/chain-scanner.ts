import { Inject, Injectable } from '@nestjs/common';
import {
  createPublicClient,
  decodeEventLog,
  erc20Abi,
  fallback,
  getAddress,
  http,
  TransactionReceiptNotFoundError,
  zeroAddress,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { batchSettlementAbi, MULTICALL3_ADDRESS, sessionEscrowAbi } from '@mp/chain';
import {
  chainAsset,
  chainLogReference,
  channelKey,
  type AssetInfo,
  type ChainChannelState,
  type ExternalEntry,
  type OpenedChannel,
  type Period,
} from '@mp/reconciliation';
import { RECON_CONFIG, type ChainNetwork, type ReconciliationConfig } from '../reconciliation.config';
import type { MerchantAddress } from '../reconciliation.ports';
import { BlockClock } from './block-clock';
import { TRANSFER_EVENT, transferLogPages, type TransferLog } from './transfer-logs';

export interface ChainScanRequest {
  period: Period;
  addresses: MerchantAddress[];
  /** `eip155:8453/0x…` */
  assets: string[];
  onProgress?(scannedBlocks: number, totalBlocks: number): void;
}

interface NetworkScan {
  network: ChainNetwork;
  client: PublicClient;
  clock: BlockClock;
  tokens: Address[];
  to: Address[];
  fromBlock: bigint;
  toBlock: bigint;
}

export interface RefundScanRequest {
  period: Period;
  /** the ledger's chain refunds: their asset and the transaction hash they are booked under */
  booked: { asset: string; txHash: string }[];
  /** where the merchant is paid: a transfer from a refund wallet to one of these is a top-up, not a refund */
  addresses: MerchantAddress[];
  /** `eip155:8453/0x…` */
  assets: string[];
}

export interface ChannelStateRequest {
  /** the books' channels: each read from its own escrow (an x402 batch channel from its batch-settlement contract) */
  channels: { network: string; escrow: string; channelId: string; scheme?: 'mpp-session' | 'x402-batch'; payee?: string; asset?: string }[];
  /** escrows whose ChannelOpened logs to `payees` in `period` are read (with the books' channels' escrows) */
  escrows: { network: string; escrow: string }[];
  /** batch-settlement contracts whose ChannelCreated logs to `payees` (as receivers) in `period` are read (with the books' batch channels' contracts) */
  batchContracts?: { network: string; escrow: string }[];
  payees: { network: string; address: string }[];
  period: Period;
}

export interface ChannelStates {
  /** by channelKey: the books' channels and those the logs found, as getChannel answered at the network's block */
  chain: Map<string, ChainChannelState>;
  opened: OpenedChannel[];
  /** the block each network was read at */
  blocks: Record<string, string>;
}

const CHANNEL_OPENED = sessionEscrowAbi.find((item) => item.type === 'event' && item.name === 'ChannelOpened')!;
const CHANNEL_CREATED = batchSettlementAbi.find((item) => item.type === 'event' && item.name === 'ChannelCreated')!;
/** getChannel calls per Multicall3 request */
const MULTICALL_CHUNK = 200;

export class UnknownNetworkError extends Error {}

/**
 * The chain side: every ERC-20 Transfer of the accepted assets to the merchant's addresses in the period, the
 * facilitator's settlements included (they are such transfers), except the payouts of the MPP session escrows
 * (RECON_SESSION_ESCROWS): a channel's settle and close are books of the channel, matched by the balance checks. The period becomes a block range by binary search
 * on block timestamps; logs are read with eth_getLogs in ranges of at most RECON_BLOCK_RANGE blocks, and each range's
 * logs become entries before the next range is read (a raw log is never kept past its page).
 */
@Injectable()
export class ChainScanner {
  private readonly clients = new Map<string, { client: PublicClient; clock: BlockClock }>();
  private readonly tokens = new Map<string, Promise<AssetInfo | undefined>>();

  constructor(@Inject(RECON_CONFIG) private readonly config: ReconciliationConfig) {}

  async scan(request: ChainScanRequest): Promise<ExternalEntry[]> {
    const scans = await this.plan(request);
    const total = scans.reduce((sum, s) => sum + Number(s.toBlock - s.fromBlock + 1n), 0);
    let done = 0;
    request.onProgress?.(0, total);
    const entries: ExternalEntry[] = [];
    for (const scan of scans) {
      const pages = transferLogPages(scan.client, {
        tokens: scan.tokens,
        to: scan.to,
        fromBlock: scan.fromBlock,
        toBlock: scan.toBlock,
        maxRange: this.config.blockRange,
        onBlocks: (scanned) => request.onProgress?.(done + Number(scanned), total),
      });
      for await (const page of pages) {
        for (const log of page) {
          // a session escrow's payout (settle, close) is a channel's, checked by the balance checks against getChannel
          if (this.escrowPayout(scan.network.network, log.args.from)) continue;
          entries.push(await this.entryOf(scan, log));
        }
      }
      done += Number(scan.toBlock - scan.fromBlock + 1n);
    }
    request.onProgress?.(total, total);
    return entries;
  }

  /**
   * The chain side of refunds: each booked refund's transaction as the chain has it (its Transfer logs of the asset,
   * none when the transaction is not on chain), and every other Transfer in the period out of the refund wallets those
   * transactions came from (a refund made outside the facilitator). A refund wallet is known from the refunds the
   * ledger booked around the period: one that refunded nothing booked is not scanned.
   */
  async scanRefunds(request: RefundScanRequest): Promise<ExternalEntry[]> {
    const entries = new Map<string, ExternalEntry>();
    const byNetwork = new Map<string, { tokens: Set<Address>; hashes: Set<Hex> }>();
    for (const { asset, txHash } of request.booked) {
      const [network, token] = asset.split('/');
      if (!/^0x[0-9a-fA-F]{40}$/.test(token ?? '') || !/^0x[0-9a-f]{64}$/.test(txHash)) continue;
      const planned = byNetwork.get(network) ?? byNetwork.set(network, { tokens: new Set(), hashes: new Set() }).get(network)!;
      planned.tokens.add(getAddress(token));
      planned.hashes.add(txHash as Hex);
    }
    for (const [name, { tokens, hashes }] of [...byNetwork].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const network = this.config.networks.find((n) => n.network === name);
      if (!network) throw new UnknownNetworkError(`no RPC URL for ${name}: add it to RECON_CHAIN_RPC_URLS`);
      const { client, clock } = this.clientFor(network);
      for (const asset of request.assets) if (asset.startsWith(`${name}/`)) tokens.add(getAddress(asset.slice(name.length + 1)));
      const merchant = new Set(request.addresses.filter((a) => a.network === name).map((a) => a.address.toLowerCase()));
      const scan = { network, clock };
      const wallets = new Set<Address>();
      for (const hash of hashes) {
        for (const log of await this.transferLogsOf(client, hash, tokens)) {
          wallets.add(getAddress(log.args.from));
          const entry = await this.entryOf(scan, log, 'refund');
          entries.set(entry.reference, entry);
        }
      }
      if (wallets.size === 0) continue;
      const latest = await client.getBlockNumber({ cacheTime: 0 });
      const fromBlock = await clock.firstBlockAtOrAfter(request.period.from, latest);
      const toBlock = (await clock.firstBlockAtOrAfter(request.period.to, latest)) - 1n;
      if (toBlock < fromBlock) continue;
      const pages = transferLogPages(client, { tokens: [...tokens], from: [...wallets], fromBlock, toBlock, maxRange: this.config.blockRange });
      for await (const page of pages) {
        for (const log of page) {
          if (merchant.has(log.args.to.toLowerCase())) continue;
          const entry = await this.entryOf(scan, log, 'refund');
          if (!entries.has(entry.reference)) entries.set(entry.reference, entry);
        }
      }
    }
    return [...entries.values()];
  }

  /**
   * The escrow side of payment channels: per network, one block (the latest) at which every channel is read with the
   * escrow's getChannel through Multicall3, and the ChannelOpened logs to the merchant's payees in the period (up to that
   * block) on the configured escrows and those of the books' channels.
   */
  async channelStates(request: ChannelStateRequest): Promise<ChannelStates> {
    const result: ChannelStates = { chain: new Map(), opened: [], blocks: {} };
    const batchContracts = request.batchContracts ?? [];
    const networks = [
      ...new Set([...request.channels.map((c) => c.network), ...request.escrows.map((e) => e.network), ...batchContracts.map((e) => e.network)]),
    ].sort();
    for (const name of networks) {
      const bookedAll = request.channels.filter((c) => c.network === name);
      const booked = bookedAll.filter((c) => c.scheme !== 'x402-batch');
      const network = this.config.networks.find((n) => n.network === name);
      if (!network) {
        // a configured escrow on a chain this ledger does not read is no channel of its books
        if (bookedAll.length === 0) continue;
        throw new UnknownNetworkError(`no RPC URL for ${name}: add it to RECON_CHAIN_RPC_URLS`);
      }
      const { client, clock } = this.clientFor(network);
      const block = await client.getBlockNumber({ cacheTime: 0 });
      result.blocks[name] = block.toString();
      const escrows = [...new Set([...request.escrows.filter((e) => e.network === name).map((e) => e.escrow), ...booked.map((c) => c.escrow)])].map((e) =>
        getAddress(e),
      );
      const payees = [...new Set(request.payees.filter((p) => p.network === name).map((p) => p.address.toLowerCase()))].map((p) => getAddress(p));
      if (escrows.length && payees.length) {
        const fromBlock = await clock.firstBlockAtOrAfter(request.period.from, block);
        const end = (await clock.firstBlockAtOrAfter(request.period.to, block)) - 1n;
        const toBlock = end < block ? end : block;
        for (let start = fromBlock; start <= toBlock; start += BigInt(this.config.blockRange)) {
          const last = start + BigInt(this.config.blockRange) - 1n < toBlock ? start + BigInt(this.config.blockRange) - 1n : toBlock;
          const logs = await client.getLogs({
            address: escrows,
            event: CHANNEL_OPENED,
            args: { payee: payees },
            fromBlock: start,
            toBlock: last,
            strict: true,
          });
          for (const log of logs) {
            const seconds = await clock.timestampOf(log.blockNumber);
            result.opened.push({
              channelId: log.args.channelId.toLowerCase(),
              network: name,
              escrow: log.address.toLowerCase(),
              payer: log.args.payer.toLowerCase(),
              payee: log.args.payee.toLowerCase(),
              token: log.args.token.toLowerCase(),
              deposit: log.args.deposit,
              transactionHash: log.transactionHash.toLowerCase(),
              blockNumber: log.blockNumber,
              occurredAt: new Date(seconds * 1000),
            });
          }
        }
      }
      const wanted = new Map<string, { escrow: Address; channelId: Hex }>();
      for (const c of [...booked, ...result.opened.filter((o) => o.network === name)])
        wanted.set(channelKey(name, c.escrow, c.channelId), { escrow: getAddress(c.escrow), channelId: c.channelId.toLowerCase() as Hex });
      const reads = [...wanted];
      for (let i = 0; i < reads.length; i += MULTICALL_CHUNK) {
        const chunk = reads.slice(i, i + MULTICALL_CHUNK);
        const answers = await client.multicall({
          contracts: chunk.map(([, c]) => ({ address: c.escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [c.channelId] }) as const),
          blockNumber: block,
          multicallAddress: MULTICALL3_ADDRESS,
          allowFailure: false,
        });
        chunk.forEach(([key, c], j) => {
          const a = answers[j] as { finalized: boolean; payer: Address; payee: Address; token: Address; deposit: bigint; settled: bigint };
          result.chain.set(key, {
            channelId: c.channelId,
            network: name,
            escrow: c.escrow.toLowerCase(),
            exists: a.payer !== zeroAddress,
            finalized: a.finalized,
            deposit: a.deposit,
            settled: a.settled,
            payer: a.payer.toLowerCase(),
            payee: a.payee.toLowerCase(),
            token: a.token.toLowerCase(),
            block,
          });
        });
      }
      await this.batchChannelStates(
        { client, clock, name, block, period: request.period, payees },
        bookedAll.filter((c) => c.scheme === 'x402-batch'),
        batchContracts.filter((e) => e.network === name).map((e) => e.escrow),
        result,
      );
    }
    return result;
  }

  /**
   * The x402 batch channels of one network at `block`: the ChannelCreated logs of the period on the batch-settlement
   * contracts whose config names one of the merchant's receivers (the event's config is not indexed: read, then
   * filtered), and each booked or found channel's `channels(id)` with its receiver's `receivers(receiver, token)`
   * totals, through Multicall3.
   */
  private async batchChannelStates(
    at: { client: PublicClient; clock: BlockClock; name: string; block: bigint; period: Period; payees: Address[] },
    booked: ChannelStateRequest['channels'],
    configured: string[],
    result: ChannelStates,
  ): Promise<void> {
    const { client, clock, name, block } = at;
    const contracts = [...new Set([...configured, ...booked.map((c) => c.escrow)].map((e) => e.toLowerCase()))].map((e) => getAddress(e));
    const receivers = new Set(at.payees.map((p) => p.toLowerCase()));
    const found: OpenedChannel[] = [];
    if (contracts.length && receivers.size) {
      const fromBlock = await clock.firstBlockAtOrAfter(at.period.from, block);
      const end = (await clock.firstBlockAtOrAfter(at.period.to, block)) - 1n;
      const toBlock = end < block ? end : block;
      for (let start = fromBlock; start <= toBlock; start += BigInt(this.config.blockRange)) {
        const last = start + BigInt(this.config.blockRange) - 1n < toBlock ? start + BigInt(this.config.blockRange) - 1n : toBlock;
        const logs = await client.getLogs({ address: contracts, event: CHANNEL_CREATED, fromBlock: start, toBlock: last, strict: true });
        for (const log of logs) {
          const config = log.args.config;
          if (!receivers.has(config.receiver.toLowerCase())) continue;
          found.push({
            channelId: log.args.channelId.toLowerCase(),
            network: name,
            escrow: log.address.toLowerCase(),
            payer: config.payer.toLowerCase(),
            payee: config.receiver.toLowerCase(),
            token: config.token.toLowerCase(),
            // ChannelCreated carries no amount: the channel's balance at the block stands for its deposit below
            deposit: 0n,
            transactionHash: log.transactionHash.toLowerCase(),
            blockNumber: log.blockNumber,
            occurredAt: new Date((await clock.timestampOf(log.blockNumber)) * 1000),
          });
        }
      }
    }
    const wanted = new Map<string, { escrow: Address; channelId: Hex; receiver: Address; token: Address }>();
    for (const c of booked) {
      if (!c.payee || !c.asset) continue;
      wanted.set(channelKey(name, c.escrow, c.channelId), {
        escrow: getAddress(c.escrow),
        channelId: c.channelId.toLowerCase() as Hex,
        receiver: getAddress(c.payee),
        token: getAddress(c.asset.split('/')[1]),
      });
    }
    for (const o of found)
      if (!wanted.has(channelKey(name, o.escrow, o.channelId)))
        wanted.set(channelKey(name, o.escrow, o.channelId), {
          escrow: getAddress(o.escrow),
          channelId: o.channelId as Hex,
          receiver: getAddress(o.payee),
          token: getAddress(o.token),
        });
    const reads = [...wanted];
    const chunkSize = MULTICALL_CHUNK / 2;
    for (let i = 0; i < reads.length; i += chunkSize) {
      const chunk = reads.slice(i, i + chunkSize);
      const answers = await client.multicall({
        contracts: chunk.flatMap(([, c]) => [
          { address: c.escrow, abi: batchSettlementAbi, functionName: 'channels', args: [c.channelId] } as const,
          { address: c.escrow, abi: batchSettlementAbi, functionName: 'receivers', args: [c.receiver, c.token] } as const,
        ]),
        blockNumber: block,
        multicallAddress: MULTICALL3_ADDRESS,
        allowFailure: false,
      });
      chunk.forEach(([key, c], j) => {
        const [balance, totalClaimed] = answers[2 * j] as readonly [bigint, bigint];
        const [receiverClaimed, receiverSettled] = answers[2 * j + 1] as readonly [bigint, bigint];
        result.chain.set(key, {
          channelId: c.channelId,
          network: name,
          escrow: c.escrow.toLowerCase(),
          exists: balance > 0n || totalClaimed > 0n,
          finalized: false,
          deposit: balance,
          settled: 0n,
          payer: '',
          payee: c.receiver.toLowerCase(),
          token: c.token.toLowerCase(),
          block,
          batch: { balance, totalClaimed, receiverClaimed, receiverSettled },
        });
      });
    }
    for (const o of found) result.opened.push({ ...o, deposit: result.chain.get(channelKey(name, o.escrow, o.channelId))?.deposit ?? 0n });
  }

  /**
   * Who sent `asset` (`eip155:8453/0x…`) in a mined transaction, lowercase: the senders of its Transfer logs; undefined
   * when the network is not read here or the asset is no token, empty when the chain has no such transaction.
   */
  async tokenSenders(asset: string, txHash: string): Promise<string[] | undefined> {
    const [name, token] = asset.split('/');
    const network = this.config.networks.find((n) => n.network === name);
    if (!network || !/^0x[0-9a-fA-F]{40}$/.test(token ?? '') || !/^0x[0-9a-fA-F]{64}$/.test(txHash)) return undefined;
    const logs = await this.transferLogsOf(this.clientFor(network).client, txHash.toLowerCase() as Hex, new Set([getAddress(token)]));
    return [...new Set(logs.map((log) => log.args.from.toLowerCase()))];
  }

  /** The Transfer logs of `tokens` in a mined transaction; none when the chain has no such transaction. */
  private async transferLogsOf(client: PublicClient, hash: Hex, tokens: Set<Address>): Promise<TransferLog[]> {
    let receipt;
    try {
      receipt = await client.getTransactionReceipt({ hash });
    } catch (error) {
      if (error instanceof TransactionReceiptNotFoundError) return [];
      throw error;
    }
    const logs: TransferLog[] = [];
    for (const log of receipt.logs) {
      if (!tokens.has(getAddress(log.address)) || log.topics[0] === undefined) continue;
      try {
        const decoded = decodeEventLog({ abi: [TRANSFER_EVENT], data: log.data, topics: log.topics, strict: true });
        logs.push({ ...log, eventName: decoded.eventName, args: decoded.args } as unknown as TransferLog);
      } catch {
        // not a Transfer (another event of the token)
      }
    }
    return logs;
  }

  /**
   * An ERC-20's symbol and decimals (`eip155:8453/0x…`), read from the chain once per process; undefined when the
   * network has no RPC URL or the token does not answer (an answer that failed is asked again next time).
   */
  tokenInfo(asset: string): Promise<AssetInfo | undefined> {
    let info = this.tokens.get(asset);
    if (!info) {
      info = this.readToken(asset);
      this.tokens.set(asset, info);
      void info.then((found) => found ?? this.tokens.delete(asset));
    }
    return info;
  }

  private async readToken(asset: string): Promise<AssetInfo | undefined> {
    const [name, token] = asset.split('/');
    const network = this.config.networks.find((n) => n.network === name);
    if (!network || !/^0x[0-9a-fA-F]{40}$/.test(token ?? '')) return undefined;
    const { client } = this.clientFor(network);
    const address = getAddress(token);
    try {
      const [symbol, decimals] = await Promise.all([
        client.readContract({ address, abi: erc20Abi, functionName: 'symbol' }),
        client.readContract({ address, abi: erc20Abi, functionName: 'decimals' }),
      ]);
      return { asset, symbol, decimals };
    } catch {
      return undefined;
    }
  }

  /** One block range per network that has both accepted assets and merchant addresses. */
  private async plan(request: ChainScanRequest): Promise<NetworkScan[]> {
    const byNetwork = new Map<string, { tokens: Set<Address>; to: Set<Address> }>();
    const of = (network: string) => byNetwork.get(network) ?? byNetwork.set(network, { tokens: new Set(), to: new Set() }).get(network)!;
    for (const asset of request.assets) {
      const [network, token] = asset.split('/');
      if (/^0x[0-9a-fA-F]{40}$/.test(token ?? '')) of(network).tokens.add(getAddress(token));
    }
    for (const a of request.addresses) of(a.network).to.add(getAddress(a.address));
    const scans: NetworkScan[] = [];
    for (const [name, { tokens, to }] of [...byNetwork].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (tokens.size === 0 || to.size === 0) continue;
      const network = this.config.networks.find((n) => n.network === name);
      if (!network) throw new UnknownNetworkError(`no RPC URL for ${name}: add it to RECON_CHAIN_RPC_URLS`);
      const { client, clock } = this.clientFor(network);
      const latest = await client.getBlockNumber({ cacheTime: 0 });
      const fromBlock = await clock.firstBlockAtOrAfter(request.period.from, latest);
      const toBlock = (await clock.firstBlockAtOrAfter(request.period.to, latest)) - 1n;
      if (toBlock < fromBlock) continue;
      scans.push({ network, client, clock, tokens: [...tokens], to: [...to], fromBlock, toBlock });
    }
    return scans;
  }

  private async entryOf(scan: Pick<NetworkScan, 'network' | 'clock'>, log: TransferLog, kind: 'payment' | 'refund' = 'payment'): Promise<ExternalEntry> {
    if (log.blockTimestamp !== undefined && log.blockTimestamp !== null) scan.clock.remember(log.blockNumber, Number(log.blockTimestamp));
    const seconds = await scan.clock.timestampOf(log.blockNumber);
    return {
      source: 'chain',
      asset: chainAsset(scan.network.network, log.address),
      reference: chainLogReference(log.transactionHash, log.logIndex),
      container: log.transactionHash.toLowerCase(),
      kind,
      amount: log.args.value,
      occurredAt: new Date(seconds * 1000),
      details: {
        network: scan.network.network,
        token: log.address.toLowerCase(),
        from: log.args.from.toLowerCase(),
        to: log.args.to.toLowerCase(),
        transactionHash: log.transactionHash.toLowerCase(),
        logIndex: String(log.logIndex),
        blockNumber: log.blockNumber.toString(),
      },
    };
  }

  private escrowPayout(network: string, from: string): boolean {
    const sender = from.toLowerCase();
    return this.config.sessionEscrows.some((e) => e.network === network && e.escrow === sender);
  }

  private clientFor(network: ChainNetwork): { client: PublicClient; clock: BlockClock } {
    let entry = this.clients.get(network.network);
    if (!entry) {
      const transports = network.rpcUrls.map((url) => http(url, { timeout: this.config.rpcTimeoutMs, retryCount: 1 }));
      const client = createPublicClient({ transport: transports.length === 1 ? transports[0] : fallback(transports) }) as PublicClient;
      entry = { client, clock: new BlockClock(client) };
      this.clients.set(network.network, entry);
    }
    return entry;
  }
}
