import { isAddressEqual, toEventSelector, type Address, type Hex, type TransactionReceipt } from 'viem';
import type { TransferFault } from './transfer-authorization.rail';

/** What a mined settlement must show: the token, and the transfer the authorization allows. */
export interface SettledTransfer {
  asset: { address: Address };
  authorization: { from: Address; to: Address; value: bigint; nonce: Hex };
}

export type ReceiptJudgement = { success: true } | { success: false; fault: TransferFault; message: string };

/**
 * Judges a mined settlement: it must have succeeded, used this very authorization (payer and nonce) and moved exactly
 * the authorized amount to the authorized recipient. The token emits its logs whether it was called directly or
 * through Multicall3 (a batch, or a counterfactual payer's deployment).
 */
export function judgeSettlementReceipt(payment: SettledTransfer, receipt: TransactionReceipt): ReceiptJudgement {
  if (receipt.status !== 'success') {
    return { success: false, fault: 'transaction_failed', message: `transaction ${receipt.transactionHash} reverted` };
  }
  const { from, to, value, nonce } = payment.authorization;
  const events = tokenEventsOf(receipt, payment.asset.address);
  // Which authorization was used, not only which amount moved: in a batch, two payments of one payer may be alike.
  if (!events.used.has(usedKey(from, nonce))) {
    return { success: false, fault: 'transfer_mismatch', message: `transaction ${receipt.transactionHash} did not use authorization ${nonce} of ${from}` };
  }
  if (!events.transfers.has(transferKey(from, to, value))) {
    return { success: false, fault: 'transfer_mismatch', message: `transaction ${receipt.transactionHash} has no Transfer of ${value} from ${from} to ${to}` };
  }
  return { success: true };
}

interface TokenEvents {
  used: Set<string>;
  transfers: Set<string>;
}

const usedKey = (authorizer: Address, nonce: Hex) => `${authorizer.toLowerCase()}:${nonce.toLowerCase()}`;
const transferKey = (from: Address, to: Address, value: bigint) => `${from.toLowerCase()}:${to.toLowerCase()}:${value}`;

/**
 * A receipt's AuthorizationUsed and Transfer events of one token, decoded once per receipt object: every payment of a
 * batch is judged against the same receipt, and decoding all its logs for each of them made a batch cost n².
 */
const decoded = new WeakMap<TransactionReceipt, Map<string, TokenEvents>>();

// The two events' topics, computed once: decoding each receipt's logs through the ABI hashed every event signature
// on every settlement (a measurable share of settle @1's CPU).
const AUTHORIZATION_USED = toEventSelector('AuthorizationUsed(address,bytes32)');
const TRANSFER = toEventSelector('Transfer(address,address,uint256)');
/** An indexed address topic (32 bytes, left-padded) as an address. */
const topicAddress = (topic: Hex) => `0x${topic.slice(26)}` as Address;

function tokenEventsOf(receipt: TransactionReceipt, token: Address): TokenEvents {
  let byToken = decoded.get(receipt);
  if (!byToken) decoded.set(receipt, (byToken = new Map()));
  const cached = byToken.get(token.toLowerCase());
  if (cached) return cached;
  const events: TokenEvents = { used: new Set(), transfers: new Set() };
  for (const log of receipt.logs) {
    if (!isAddressEqual(log.address, token) || log.topics.length !== 3) continue;
    const [topic, first, second] = log.topics as [Hex, Hex, Hex];
    // AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)
    if (topic === AUTHORIZATION_USED && log.data === '0x') events.used.add(usedKey(topicAddress(first), second));
    // Transfer(address indexed from, address indexed to, uint256 value)
    else if (topic === TRANSFER && log.data.length === 66) events.transfers.add(transferKey(topicAddress(first), topicAddress(second), BigInt(log.data)));
  }
  byToken.set(token.toLowerCase(), events);
  return events;
}

/** Maps an error from estimating or sending a settlement to the fault it shows, as the reference reads them. */
export function sendFault(error: unknown): TransferFault {
  const message = error instanceof Error ? error.message : String(error);
  // The facilitator's own wallet cannot pay gas: our problem, never the payer's.
  if (/insufficient funds for (gas|intrinsic)|gas required exceeds allowance/i.test(message)) return 'facilitator_unable';
  if (/authorization.*(expired|valid before)|AuthorizationExpired/i.test(message)) return 'expires_too_soon';
  if (/authorization.*not.*valid|AuthorizationNotYetValid/i.test(message)) return 'not_yet_valid';
  if (/authorization.*used|AuthorizationAlreadyUsed|AuthorizationUsedOrCanceled/i.test(message)) return 'nonce_used';
  if (/transfer.*exceeds.*balance|insufficient.*balance|ERC20InsufficientBalance/i.test(message)) return 'insufficient_balance';
  if (/invalid.*signature|SignerMismatch|InvalidSignatureV|InvalidSignatureS/i.test(message)) return 'signature_invalid';
  return 'transaction_failed';
}
