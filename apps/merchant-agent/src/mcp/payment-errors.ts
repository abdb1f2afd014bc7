import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { MppChallenge, MppProblem } from '@mp/clients';
import { problemType, toProblemDetails } from '@mp/mpp';

/**
 * The JSON-RPC errors of the MPP MCP binding (draft-payment-transport-mcp): the code says what the client can do,
 * `data` carries the HTTP status the same failure would have had, fresh challenges and the RFC 9457 problem.
 */
export const PAYMENT_REQUIRED = -32042;
export const PAYMENT_VERIFICATION_FAILED = -32043;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/** McpError prefixes its message with "MCP error <code>: "; the binding's messages are the plain problem titles. */
export class PaymentRpcError extends McpError {
  constructor(code: number, message: string, data: Record<string, unknown>) {
    super(code, message, data);
    this.message = message;
  }
}

/** A payment problem (ours or the facilitator's) as the JSON-RPC error the binding assigns to its type. */
export function paymentError(httpStatus: number, problem: MppProblem, challenges: MppChallenge[]): PaymentRpcError {
  const code = codeFor(problem.type);
  const reason = problem.type.split('/').pop() ?? problem.type;
  return new PaymentRpcError(code, problem.title, {
    httpStatus,
    challenges,
    problem,
    ...(code === PAYMENT_VERIFICATION_FAILED && { failure: { reason, detail: problem.detail ?? problem.title } }),
  });
}

/** The facilitator could not be asked (down, misconfigured key, invalid terms): nothing was charged. */
export function paymentUnavailable(): PaymentRpcError {
  const problem = toProblemDetails('internal-payment-error', {
    detail: 'the merchant could not reach its payment facilitator; nothing was charged, try again later',
  });
  return new PaymentRpcError(INTERNAL_ERROR, problem.title, { httpStatus: problem.status, problem });
}

function codeFor(type: string): number {
  switch (type) {
    case problemType('payment-required'):
      return PAYMENT_REQUIRED;
    case problemType('malformed-credential'):
    case problemType('invalid-payload'):
      return INVALID_PARAMS;
    case problemType('internal-payment-error'):
      return INTERNAL_ERROR;
    default:
      return PAYMENT_VERIFICATION_FAILED;
  }
}
