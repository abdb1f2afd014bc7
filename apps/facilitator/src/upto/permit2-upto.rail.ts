import { Injectable, Logger } from '@nestjs/common';
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeFunctionData,
  encodeFunctionData,
  isAddressEqual,
  parseEventLogs,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import {
  eip3009Abi,
  isTransportFailure,
  PERMIT2_ADDRESS,
  permit2Abi,
  revertReason,
  uptoPermit2Types,
  x402UptoPermit2ProxyAbi,
  type ContractCall,
} from '@mp/chain';
import { UPTO_PERMIT2_PROXY_ADDRESS, uptoSettleArgs, uptoTypedMessage, X402Reason, type UptoPermit } from '@mp/x402';
import { ChainUnavailableError } from '../eip3009/transfer-authorization.rail';
import { NetworkRegistry, type Network } from '../networks/network-registry';

/** A refusal in x402's own upto vocabulary (@x402/evm 2.27), with a readable message. */
export type UptoRefusal = { ok: false; reason: string; message: string };
export type UptoVerdict = { ok: true } | UptoRefusal;

/** Reverts of the proxy and Permit2, by custom error name, as the reference maps them (mapSettleError). */
const REVERT_REASONS: Record<string, string> = {
  AmountExceedsPermitted: X402Reason.uptoAmountExceedsPermitted,
  UnauthorizedFacilitator: X402Reason.uptoUnauthorizedFacilitator,
  InvalidAmount: X402Reason.permit2InvalidAmount,
  InvalidDestination: X402Reason.permit2InvalidDestination,
  InvalidOwner: X402Reason.permit2InvalidOwner,
  PaymentTooEarly: X402Reason.permit2PaymentTooEarly,
  InvalidNonce: X402Reason.permit2InvalidNonce,
  SignatureExpired: X402Reason.permit2Signature,
  InvalidSignature: X402Reason.permit2Signature,
  InvalidSigner: X402Reason.permit2Signature,
  InvalidSignatureLength: X402Reason.permit2Signature,
  InvalidContractSignature: X402Reason.permit2Signature,
  Permit2612AmountMismatch: 'permit2_2612_amount_mismatch',
  ERC20InsufficientBalance: X402Reason.permit2InsufficientBalance,
  ERC20InsufficientAllowance: X402Reason.permit2AllowanceRequired,
};

/** The settled permit as a payment record holds it: enough to judge a receipt and to read the nonce on chain. */
export interface RecordedUptoCharge {
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  /** The amount charged (not the signed maximum). */
  amount: bigint;
  /** The permit's nonce as a 32-byte word (permitNonceKey). */
  authorizationNonce: Hex;
}

/**
 * x402 `upto` on EVM: everything that touches a Permit2 witness transfer through the x402 upto proxy on chain. It
 * answers in x402's upto reasons; RPC failures throw ChainUnavailableError, never a guessed verdict.
 */
@Injectable()
export class Permit2UptoRail {
  private readonly logger = new Logger(Permit2UptoRail.name);

  constructor(private readonly networks: NetworkRegistry) {}

  /**
   * The chain-facing checks after the codec's (uptoEvmPermit): the asset is a contract, the signature is the owner's
   * (EOA, ERC-1271 or ERC-6492, through viem's verifyTypedData), and with `simulate` one eth_call of the proxy's
   * settle for `amount` from the permit's facilitator, diagnosed as the reference does when it reverts.
   */
  async verify(permit: UptoPermit, amount: bigint, options: { simulate: boolean }): Promise<UptoVerdict> {
    const network = this.network(permit.network);
    if (!(await this.hasCode(network, permit.asset))) {
      return refuse(X402Reason.assetNotDeployedContract, `asset ${permit.asset} has no contract code on ${permit.network}`);
    }
    let signed: boolean;
    try {
      signed = await network.client.verifyTypedData({
        address: permit.owner,
        domain: { name: 'Permit2', chainId: network.config.chainId, verifyingContract: PERMIT2_ADDRESS },
        types: uptoPermit2Types,
        primaryType: 'PermitWitnessTransferFrom',
        message: uptoTypedMessage(permit),
        signature: permit.signature,
      });
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      signed = false;
    }
    if (!signed) return refuse(X402Reason.permit2Signature, `the permit is not signed by ${permit.owner}`);
    if (!options.simulate) return { ok: true };
    try {
      await network.client.simulateContract({ ...settleCall(permit, amount), account: permit.witness.facilitator });
      return { ok: true };
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return this.diagnose(network, permit, amount, error);
    }
  }

  /** The proxy's settle call charging `amount`, with its raw gas estimate from the permit's facilitator (which simulates it). */
  async settlementCall(permit: UptoPermit, amount: bigint): Promise<{ ok: true; call: ContractCall } | UptoRefusal> {
    const network = this.network(permit.network);
    const data = settleData(permit, amount);
    try {
      const gas = await network.client.estimateContractGas({ ...settleCall(permit, amount), account: permit.witness.facilitator });
      return { ok: true, call: { to: UPTO_PERMIT2_PROXY_ADDRESS, data, gas } };
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return this.diagnose(network, permit, amount, error);
    }
  }

  /** Whether Permit2 has the owner's nonce spent (by a settlement, any other spender, or the owner's invalidation). */
  async nonceUsed(networkId: string, owner: Address, nonce: bigint): Promise<boolean> {
    const network = this.network(networkId);
    try {
      const word = await network.client.readContract({ address: PERMIT2_ADDRESS, abi: permit2Abi, functionName: 'nonceBitmap', args: [owner, nonce >> 8n] });
      return (word & (1n << (nonce & 0xffn))) !== 0n;
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * Whether a mined transaction of ours carried the charge: it succeeded and the token logged the Transfer of exactly
   * the amount from the owner to the recipient. Permit2 logs no event for a spent nonce, but our transaction's calldata
   * is the permit itself, so a successful one spent that very nonce.
   */
  judgeReceipt(charge: RecordedUptoCharge, receipt: TransactionReceipt): { success: true } | { success: false; reason: string; message: string } {
    if (receipt.status !== 'success') {
      return { success: false, reason: X402Reason.uptoEvmTransactionFailed, message: `transaction ${receipt.transactionHash} reverted` };
    }
    const transfers = parseEventLogs({
      abi: eip3009Abi,
      eventName: 'Transfer',
      logs: receipt.logs.filter((l) => isAddressEqual(l.address, charge.asset as Address)),
    });
    const moved = transfers.some(
      (t) => isAddressEqual(t.args.from, charge.payer as Address) && isAddressEqual(t.args.to, charge.payTo as Address) && t.args.value === charge.amount,
    );
    if (!moved) {
      return {
        success: false,
        reason: X402Reason.uptoEvmTransactionFailed,
        message: `transaction ${receipt.transactionHash} has no Transfer of ${charge.amount} from ${charge.payer} to ${charge.payTo}`,
      };
    }
    return { success: true };
  }

  /** The reason behind an error from estimating or sending a settlement; `ours`: our wallet cannot pay the gas. */
  sendFailure(error: unknown): { reason: string; ours: boolean } {
    const message = error instanceof Error ? error.message : String(error);
    if (/insufficient funds for (gas|intrinsic)|gas required exceeds allowance/i.test(message)) return { reason: X402Reason.unexpectedSettleError, ours: true };
    return { reason: reasonOfRevert(error) ?? X402Reason.uptoEvmTransactionFailed, ours: false };
  }

  /** After a reverted simulation: a named revert, else the reference's diagnosis (proxy, balance, Permit2 allowance). */
  private async diagnose(network: Network, permit: UptoPermit, amount: bigint, error: unknown): Promise<UptoRefusal> {
    const detail = revertReason(error);
    const named = reasonOfRevert(error);
    if (named) return refuse(named, `the settlement would revert: ${detail}`);
    const { client } = network;
    const [proxy, balance, allowance] = await Promise.allSettled([
      client.getCode({ address: UPTO_PERMIT2_PROXY_ADDRESS }),
      client.readContract({ address: permit.asset, abi: eip3009Abi, functionName: 'balanceOf', args: [permit.owner] }),
      client.readContract({ address: permit.asset, abi: allowanceAbi, functionName: 'allowance', args: [permit.owner, PERMIT2_ADDRESS] }),
    ]);
    for (const read of [proxy, balance, allowance]) if (read.status === 'rejected' && isTransportFailure(read.reason)) throw unavailable(read.reason);
    if (proxy.status === 'fulfilled' && (!proxy.value || proxy.value === '0x')) {
      return refuse(X402Reason.permit2ProxyNotDeployed, `the x402 upto proxy has no code on ${permit.network}`);
    }
    if (balance.status === 'fulfilled' && balance.value < amount) {
      return refuse(X402Reason.permit2InsufficientBalance, `${permit.owner} holds ${balance.value}, less than ${amount}`);
    }
    if (allowance.status === 'fulfilled' && allowance.value < amount) {
      return refuse(
        X402Reason.permit2AllowanceRequired,
        `${permit.owner} allows Permit2 ${allowance.value} of ${permit.asset}, less than ${amount}: approve Permit2 first`,
      );
    }
    this.logger.debug(`upto simulation failed for ${permit.owner}: ${detail}`);
    return refuse(X402Reason.permit2SimulationFailed, `the settlement would revert${detail ? `: ${detail}` : ''}`);
  }

  private async hasCode(network: Network, address: Address): Promise<boolean> {
    try {
      const code = await network.client.getCode({ address });
      return code !== undefined && code !== '0x';
    } catch (error) {
      throw unavailable(error);
    }
  }

  private network(networkId: string): Network {
    const network = this.networks.resolve(networkId, 2);
    if (!network) throw new ChainUnavailableError(`network ${networkId} is not configured`);
    return network;
  }
}

const allowanceAbi = [
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ type: 'uint256' }],
  },
] as const;

function settleCall(permit: UptoPermit, amount: bigint) {
  return { address: UPTO_PERMIT2_PROXY_ADDRESS, abi: x402UptoPermit2ProxyAbi, functionName: 'settle', args: uptoSettleArgs(permit, amount) } as const;
}

/** The calldata of the proxy's settle for `amount` under the permit. */
export function settleData(permit: UptoPermit, amount: bigint): Hex {
  return encodeFunctionData({ abi: x402UptoPermit2ProxyAbi, functionName: 'settle', args: uptoSettleArgs(permit, amount) });
}

/**
 * The facilitator a recorded settle call must be sent from: its witness names the only sender the proxy accepts, so the
 * call itself says who sends it (no column of its own on the payment).
 */
export function uptoSettleSender(data: Hex): Address | undefined {
  try {
    const { functionName, args } = decodeFunctionData({ abi: x402UptoPermit2ProxyAbi, data });
    if (functionName === 'settle') return args[3].facilitator;
    if (functionName === 'settleWithPermit') return args[4].facilitator;
  } catch {
    // not an upto proxy call
  }
  return undefined;
}

function reasonOfRevert(error: unknown): string | undefined {
  const reverted = error instanceof BaseError ? (error.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null) : null;
  const name = reverted?.data?.errorName;
  if (name && REVERT_REASONS[name]) return REVERT_REASONS[name];
  const message = error instanceof Error ? error.message : String(error);
  const match = Object.keys(REVERT_REASONS).find((k) => new RegExp(`\\b${k}\\b`).test(message));
  return match && REVERT_REASONS[match];
}

function refuse(reason: string, message: string): UptoRefusal {
  return { ok: false, reason, message };
}

function unavailable(cause: unknown): ChainUnavailableError {
  return new ChainUnavailableError(`the chain could not be reached: ${revertReason(cause) ?? String(cause)}`);
}
