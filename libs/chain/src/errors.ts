import { BaseError, ContractFunctionRevertedError, HttpRequestError, RpcError, RpcRequestError, TimeoutError } from 'viem';

/**
 * Tells a contract revert (the payment is bad) from an RPC failure (our node is sick). A sick node must never
 * be reported to a payer as an invalid signature.
 */
export function isTransportFailure(error: unknown): boolean {
  if (!(error instanceof BaseError)) return !(error instanceof Error && /revert/i.test(error.message));
  if (error.walk((e) => e instanceof ContractFunctionRevertedError)) return false;
  if (error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError)) return true;
  const rpc = error.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  if (rpc) return !/revert/i.test(rpc.details ?? rpc.message) && rpc.code !== 3;
  return !/revert/i.test(error.message);
}

/**
 * Whether a failed broadcast may still have reached the network: the request died on the way (connection,
 * timeout, HTTP error) rather than the node answering with a JSON-RPC error, which is a definite rejection.
 */
export function isDeliveryUncertain(error: unknown): boolean {
  if (!(error instanceof BaseError)) return true;
  return error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError) !== null;
}

/** What the node said about a failed call or send: the revert reason if there is one, else its error details. */
export function revertReason(error: unknown): string | undefined {
  if (error instanceof BaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    if (reverted?.reason) return reverted.reason;
    const text = error.details || error.shortMessage;
    const match = /reverted(?: with reason string)?:? ['"]?([^'"\n]+)/i.exec(text);
    return match ? match[1].trim() : text;
  }
  return error instanceof Error ? error.message.split('\n')[0] : undefined;
}

/** The JSON-RPC error code the node answered with, if the error is the node's answer. */
export function rpcErrorCode(error: unknown): number | undefined {
  if (!(error instanceof BaseError)) return undefined;
  const answered = error.walk((e) => e instanceof RpcRequestError || e instanceof RpcError) as RpcRequestError | RpcError | null;
  return answered?.code;
}
