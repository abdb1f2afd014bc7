import { randomBytes } from 'node:crypto';
import {
  BaseError,
  ContractFunctionRevertedError,
  erc20Abi,
  getAddress,
  parseEventLogs,
  toHex,
  zeroAddress,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { sessionEscrowAbi } from '@mp/chain';
import {
  computeChannelId,
  evmSessionRequestSchema,
  evmSource,
  isLowS,
  MAX_UINT128,
  openAuthorizationNonce,
  receiveWithAuthorizationTypedData,
  topUpAuthorizationNonce,
  voucherTypedData,
  type ClosePayload,
  type EvmSessionReceipt,
  type EvmSessionRequest,
  type OpenAuthorizationPayload,
  type OpenHashPayload,
  type TopUpAuthorizationPayload,
  type TopUpHashPayload,
  type VoucherPayload,
} from '@mp/mpp';

/** Anything that signs EIP-712 typed data: a viem local account, or the owner key an ERC-1271 wallet accepts. */
export interface TypedDataSigner {
  address: Address;
  signTypedData: (typedData: any) => Promise<Hex>;
}

export interface SessionPayer {
  /** the payer: an EOA, or an ERC-1271 wallet (which can only open and top up by relayed authorization) */
  address: Address;
  /** signs the payer's EIP-3009 authorizations (for an ERC-1271 wallet: the key its isValidSignature accepts) */
  signer: TypedDataSigner;
  /** sends the payer's own transactions (direct open/topUp, approve, requestClose, withdraw): EOA payers only */
  wallet?: WalletClient<Transport, Chain, Account>;
}

/** One channel as the buyer keeps it: the terms, and the highest cumulative amount it has signed. */
export interface BuyerChannel {
  channelId: Hex;
  chainId: number;
  escrow: Address;
  token: Address;
  payer: Address;
  payee: Address;
  salt: Hex;
  authorizedSigner: Address;
  deposit: bigint;
  /** the highest voucher signed so far (vouchers are cumulative: never sign less, never above the deposit) */
  signedCumulative: bigint;
}

export class SessionClientError extends Error {
  constructor(
    message: string,
    /** the escrow's custom error, when a transaction would revert */
    readonly revert?: string,
  ) {
    super(message);
    this.name = 'SessionClientError';
  }
}

export interface OpenOptions {
  deposit: bigint;
  /** 32 random bytes by default */
  salt?: Hex;
  /** how long a relayed authorization stays valid (seconds, default 600) */
  validForSeconds?: number;
}

/**
 * The buyer side of the MPP `evm` `session` intent (draft-evm-session-00) against our escrow: opens channels (directly
 * with approve + open, answered with a `hash` credential; or relayed with an EIP-3009 ReceiveWithAuthorization, the
 * `authorization` credential), signs cumulative low-s 65-byte vouchers, tops up, signs the close (= spent of the last
 * receipt), and runs the payer's forced close (requestClose, wait the grace period, withdraw).
 */
export class EvmSessionChannelClient {
  private readonly voucherSigner: TypedDataSigner;

  constructor(
    private readonly publicClient: PublicClient,
    private readonly payer: SessionPayer,
    /** the channel's authorizedSigner (delegated voucher key); the payer's own signer when absent */
    voucherSigner?: TypedDataSigner,
  ) {
    this.voucherSigner = voucherSigner ?? payer.signer;
  }

  /** The session request of a challenge (`challenge.request`), or a readable error. */
  static parseRequest(request: unknown): EvmSessionRequest {
    const parsed = evmSessionRequestSchema.safeParse(request);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new SessionClientError(`not an evm session request: ${issue?.path.join('.')}: ${issue?.message}`);
    }
    return parsed.data;
  }

  /** `did:pkh:eip155:<chainId>:<payer>`: the `source` a hash credential must carry. */
  source(chainId: number): string {
    return evmSource(chainId, this.payer.address);
  }

  private terms(request: EvmSessionRequest, salt: Hex) {
    return {
      payer: getAddress(this.payer.address),
      payee: getAddress(request.recipient),
      token: getAddress(request.currency),
      salt,
      authorizedSigner: this.voucherSigner.address.toLowerCase() === this.payer.address.toLowerCase() ? zeroAddress : getAddress(this.voucherSigner.address),
    };
  }

  private channelFor(request: EvmSessionRequest, salt: Hex, deposit: bigint): BuyerChannel {
    const terms = this.terms(request, salt);
    const escrow = getAddress(request.methodDetails.escrowContract);
    return {
      channelId: computeChannelId(terms, escrow, request.methodDetails.chainId),
      chainId: request.methodDetails.chainId,
      escrow,
      token: terms.token,
      payer: terms.payer,
      payee: terms.payee,
      salt,
      authorizedSigner: terms.authorizedSigner,
      deposit,
      signedCumulative: 0n,
    };
  }

  private wallet(): WalletClient<Transport, Chain, Account> {
    if (!this.payer.wallet) throw new SessionClientError('this payer sends no transactions (an ERC-1271 wallet): open and top up by authorization');
    return this.payer.wallet;
  }

  /** Simulates, sends and waits for a transaction; a revert (or a failed receipt) is a SessionClientError. */
  private async transact(address: Address, abi: any, functionName: string, args: readonly unknown[]): Promise<{ hash: Hex; logs: any[] }> {
    const wallet = this.wallet();
    let request: unknown;
    try {
      ({ request } = await this.publicClient.simulateContract({ account: wallet.account, address, abi, functionName, args } as never));
    } catch (error) {
      const revert = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
      const name = revert instanceof ContractFunctionRevertedError ? (revert.data?.errorName ?? revert.reason) : undefined;
      throw new SessionClientError(`${functionName} would revert${name ? ` (${name})` : ''}`, name ?? undefined);
    }
    const hash = await wallet.writeContract(request as never);
    const receipt = await this.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 100, timeout: 120_000 });
    // the receipt decides, never an error string: status 0x0 is final
    if (receipt.status !== 'success') throw new SessionClientError(`${functionName} transaction ${hash} reverted`);
    return { hash, logs: receipt.logs };
  }

  private async ensureAllowance(token: Address, spender: Address, amount: bigint): Promise<void> {
    const allowance = await this.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [this.payer.address, spender] });
    if (allowance < amount) await this.transact(token, erc20Abi, 'approve', [spender, amount]);
  }

  /** The EIP-712 domain of the token (ERC-5267 eip712Domain(), else name() and version()). */
  async tokenDomain(token: Address): Promise<{ name: string; version: string }> {
    try {
      const [, name, version] = await this.publicClient.readContract({ address: token, abi: eip5267Abi, functionName: 'eip712Domain' });
      return { name, version };
    } catch {
      const [name, version] = await Promise.all([
        this.publicClient.readContract({ address: token, abi: nameVersionAbi, functionName: 'name' }),
        this.publicClient.readContract({ address: token, abi: nameVersionAbi, functionName: 'version' }),
      ]);
      return { name, version };
    }
  }

  private async receiveAuthorization(channel: Pick<BuyerChannel, 'chainId' | 'escrow' | 'token'>, value: bigint, nonce: Hex, validForSeconds = 600) {
    const domain = await this.tokenDomain(channel.token);
    const block = await this.publicClient.getBlock({ blockTag: 'latest' });
    const message = {
      from: getAddress(this.payer.address),
      to: channel.escrow,
      value,
      validAfter: 0n,
      validBefore: block.timestamp + BigInt(validForSeconds),
      nonce,
    };
    const signature = await this.payer.signer.signTypedData(
      receiveWithAuthorizationTypedData({ ...domain, chainId: channel.chainId, address: channel.token }, message),
    );
    return {
      authorization: {
        from: message.from,
        to: message.to,
        value: value.toString(),
        validAfter: message.validAfter.toString(),
        validBefore: message.validBefore.toString(),
        nonce,
      },
      signature: signature.toLowerCase() as Hex,
    };
  }

  /** approve + open on chain, then the `open`/`hash` payload with the initial voucher (cumulative 0). */
  async openDirect(request: EvmSessionRequest, options: OpenOptions): Promise<{ channel: BuyerChannel; payload: OpenHashPayload; source: string }> {
    const channel = this.channelFor(request, options.salt ?? randomSalt(), options.deposit);
    await this.ensureAllowance(channel.token, channel.escrow, options.deposit);
    const { hash, logs } = await this.transact(channel.escrow, sessionEscrowAbi, 'open', [
      channel.payee,
      channel.token,
      options.deposit,
      channel.salt,
      channel.authorizedSigner,
    ]);
    const opened = parseEventLogs({ abi: sessionEscrowAbi, logs, eventName: 'ChannelOpened' }).find(
      (e) => e.address.toLowerCase() === channel.escrow.toLowerCase(),
    );
    if (opened?.args.channelId !== channel.channelId) throw new SessionClientError(`open ${hash} did not open channel ${channel.channelId}`);
    const payload: OpenHashPayload = {
      action: 'open',
      type: 'hash',
      channelId: channel.channelId,
      hash,
      cumulativeAmount: '0',
      signature: await this.signVoucher(channel, 0n),
      salt: channel.salt,
      ...(channel.authorizedSigner !== zeroAddress && { authorizedSigner: channel.authorizedSigner }),
    };
    return { channel, payload, source: this.source(channel.chainId) };
  }

  /** The `open`/`authorization` payload: nothing on chain yet, the server submits openWithAuthorization. */
  async openRelayed(request: EvmSessionRequest, options: OpenOptions): Promise<{ channel: BuyerChannel; payload: OpenAuthorizationPayload; source: string }> {
    const channel = this.channelFor(request, options.salt ?? randomSalt(), options.deposit);
    const { authorization, signature } = await this.receiveAuthorization(
      channel,
      options.deposit,
      openAuthorizationNonce(this.terms(request, channel.salt)),
      options.validForSeconds,
    );
    const payload: OpenAuthorizationPayload = {
      action: 'open',
      type: 'authorization',
      channelId: channel.channelId,
      authorization,
      signature,
      cumulativeAmount: '0',
      voucherSignature: await this.signVoucher(channel, 0n),
      salt: channel.salt,
      ...(channel.authorizedSigner !== zeroAddress && { authorizedSigner: channel.authorizedSigner }),
    };
    return { channel, payload, source: this.source(channel.chainId) };
  }

  /** approve + topUp on chain, then the `topUp`/`hash` payload. */
  async topUpDirect(channel: BuyerChannel, additionalDeposit: bigint): Promise<TopUpHashPayload> {
    await this.ensureAllowance(channel.token, channel.escrow, additionalDeposit);
    const { hash } = await this.transact(channel.escrow, sessionEscrowAbi, 'topUp', [channel.channelId, additionalDeposit]);
    channel.deposit += additionalDeposit;
    return { action: 'topUp', type: 'hash', channelId: channel.channelId, hash, additionalDeposit: additionalDeposit.toString() };
  }

  /** The `topUp`/`authorization` payload (the server submits topUpWithAuthorization). */
  async topUpRelayed(channel: BuyerChannel, additionalDeposit: bigint, validForSeconds?: number): Promise<TopUpAuthorizationPayload> {
    const topUpSalt = randomSalt();
    const nonce = topUpAuthorizationNonce(channel.channelId, additionalDeposit, getAddress(this.payer.address), topUpSalt);
    const { authorization, signature } = await this.receiveAuthorization(channel, additionalDeposit, nonce, validForSeconds);
    // counted when the server confirms it; a voucher above the old deposit waits for that
    return {
      action: 'topUp',
      type: 'authorization',
      channelId: channel.channelId,
      authorization,
      signature,
      additionalDeposit: additionalDeposit.toString(),
      salt: topUpSalt,
    };
  }

  /** A 65-byte, low-s voucher signature for `cumulativeAmount` (EIP-712, domain bound to the escrow). */
  async signVoucher(channel: BuyerChannel, cumulativeAmount: bigint): Promise<Hex> {
    if (cumulativeAmount < 0n || cumulativeAmount > MAX_UINT128) throw new SessionClientError('a voucher amount must fit in uint128');
    const signature = (
      await this.voucherSigner.signTypedData(
        voucherTypedData({ chainId: channel.chainId, escrowContract: channel.escrow }, { channelId: channel.channelId, cumulativeAmount }),
      )
    ).toLowerCase() as Hex;
    if (!isLowS(signature)) throw new SessionClientError('the signer produced a signature that is not 65 bytes with low s');
    return signature;
  }

  /** The `voucher` payload raising the channel to `cumulativeAmount` (never above the deposit, never below what was signed). */
  async voucher(channel: BuyerChannel, cumulativeAmount: bigint): Promise<VoucherPayload> {
    if (cumulativeAmount > channel.deposit)
      throw new SessionClientError(`a voucher for ${cumulativeAmount} exceeds the deposit ${channel.deposit}: top up first`);
    const amount = cumulativeAmount > channel.signedCumulative ? cumulativeAmount : channel.signedCumulative;
    const signature = await this.signVoucher(channel, amount);
    channel.signedCumulative = amount;
    return { action: 'voucher', channelId: channel.channelId, cumulativeAmount: amount.toString(), signature };
  }

  /**
   * The `close` payload. Ours: the close voucher is `spent` of the last receipt, not the accepted cumulative (the
   * escrow pays the payee `cum − settled`, so signing accepted would over-capture what was never delivered).
   */
  async close(channel: BuyerChannel, lastReceipt: Pick<EvmSessionReceipt, 'channelId' | 'spent'>): Promise<ClosePayload> {
    if (lastReceipt.channelId !== channel.channelId)
      throw new SessionClientError(`the receipt is for channel ${lastReceipt.channelId}, not ${channel.channelId}`);
    const spent = BigInt(lastReceipt.spent);
    return { action: 'close', channelId: channel.channelId, cumulativeAmount: spent.toString(), signature: await this.signVoucher(channel, spent) };
  }

  /** The channel as the escrow records it. */
  async readChannel(channelId: Hex, escrow: Address) {
    return this.publicClient.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] });
  }

  /** Forced close, step 1: starts the escrow's grace period (CLOSE_GRACE_PERIOD). Returns when withdraw becomes possible. */
  async requestClose(channel: BuyerChannel): Promise<{ hash: Hex; closeGraceEnd: bigint }> {
    const { hash, logs } = await this.transact(channel.escrow, sessionEscrowAbi, 'requestClose', [channel.channelId]);
    const requested = parseEventLogs({ abi: sessionEscrowAbi, logs, eventName: 'CloseRequested' })[0];
    const closeGraceEnd =
      requested?.args.closeGraceEnd ?? (await this.readChannel(channel.channelId, channel.escrow)).closeRequestedAt + (await this.gracePeriod(channel.escrow));
    return { hash, closeGraceEnd };
  }

  /** Forced close, step 2 (after the grace period): the unsettled rest comes back to the payer. */
  async withdraw(channel: BuyerChannel): Promise<{ hash: Hex; settledToPayee: bigint; refundedToPayer: bigint }> {
    const { hash, logs } = await this.transact(channel.escrow, sessionEscrowAbi, 'withdraw', [channel.channelId]);
    const closed = parseEventLogs({ abi: sessionEscrowAbi, logs, eventName: 'ChannelClosed' })[0];
    if (!closed) throw new SessionClientError(`withdraw ${hash} closed nothing`);
    return { hash, settledToPayee: closed.args.settledToPayee, refundedToPayer: closed.args.refundedToPayer };
  }

  async gracePeriod(escrow: Address): Promise<bigint> {
    return this.publicClient.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'CLOSE_GRACE_PERIOD' });
  }
}

function randomSalt(): Hex {
  return toHex(randomBytes(32));
}

const eip5267Abi = [
  {
    type: 'function',
    name: 'eip712Domain',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'fields', type: 'bytes1' },
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
      { name: 'salt', type: 'bytes32' },
      { name: 'extensions', type: 'uint256[]' },
    ],
  },
] as const;

const nameVersionAbi = [
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
] as const;
