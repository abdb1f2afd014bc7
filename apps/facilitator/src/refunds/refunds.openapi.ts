import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, uuidPathParameter, type OperationDoc } from '@mp/platform';
import { JSON_BODY_ERRORS, MERCHANT_KEY_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about RefundsController's routes (see @ApiDoc). */

const REFUND_EXAMPLE = {
  id: '0d7a3c55-9d0f-4b8e-8f1e-1c2b3a4d5e6f',
  status: 'executed',
  amount: '4000',
  refundTxHash: '0x3b1c0e5d7f9a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c',
  paymentId: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
  rail: 'evm',
  network: 'eip155:84532',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  reason: 'service_not_delivered',
  reasonDetail: null,
  idempotencyKey: '9f3b1c2d-4e5f-6a7b-8c9d-0e1f2a3b4c5d',
  refundTo: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
  reference: '0x3b1c0e5d7f9a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c',
  failureReason: null,
  failureMessage: null,
  createdAt: '2026-12-02T00:10:00.000Z',
  finishedAt: '2026-12-02T00:10:02.000Z',
};

const DENIED_EXAMPLE = {
  ...REFUND_EXAMPLE,
  id: '2a4c6e80-1b3d-4f5a-8c7e-9d0f1a2b3c4d',
  status: 'denied',
  amount: '20000',
  refundTxHash: undefined,
  denialReason: 'amount_exceeds_settled',
  idempotencyKey: 'a1b2c3d4-0000-4000-8000-000000000001',
  reference: null,
};

const REFUND_RESPONSE =
  "The refund, in the x402 refund extension's RefundResponse shape (`status` executed | pending | denied, `amount`, `refundTxHash` when executed on chain, `denialReason` when denied) plus `failed` (a pending refund that did not happen: reverted, or failed at Stripe; nothing moved) and what names it: `{id, paymentId, rail, network, asset, reason, reasonDetail, idempotencyKey, refundTo, reference, failureReason, failureMessage, createdAt, finishedAt}`.";

export const REFUNDS_DOCS = {
  create: {
    operationId: 'createRefund',
    summary: "Refund (part of) one of the calling merchant's confirmed payments",
    description: [
      "The x402 `refund` extension's RefundRequest, sent by the merchant with its API key (the key is the authority; `payerSignature` is recorded, not verified).",
      '`paymentReference` names the payment: `{network, txHash}` for an EVM payment (plus `paymentId` when one transaction settled several), `{network: "stripe", paymentId}` for a Stripe payment (its id here or its PaymentIntent `pi_…`). `paymentId` may also be the x402 payment-identifier it was settled under.',
      "Accepted refunds of a payment never add up to more than it captured: the check and the write are one transaction with the payment locked. Above what is left, the answer is `denied` (`amount_exceeds_settled`, or `already_refunded` when nothing is left). Other denials: `payment_not_settled` (not confirmed), `refund_wallet_not_configured` (EVM refunds need the merchant's refund wallet, REFUND_WALLET_KEYS), `refund_wallet_underfunded`, `rail_not_configured`.",
      'EVM: an ERC-20 transfer from the refund wallet to `refundTo` (default: the payer), answered `executed` with `refundTxHash` once mined (waiting up to REFUND_WAIT_MS), else `pending`. Stripe: a Stripe refund, `executed` when Stripe says succeeded, else `pending` until its webhook or the sweep.',
      'Every answer is 200 with the refund; the same `idempotencyKey` with the same request answers the same refund as it stands now, with another request 409 `refund_idempotency_conflict`. Bad input is a 400 and writes nothing.',
    ].join('\n\n'),
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        REFUND_RESPONSE,
        { $ref: '#/components/schemas/Refund' },
        {
          headers: NO_STORE_HEADERS,
          examples: { executed: { summary: 'Executed on chain', value: REFUND_EXAMPLE }, denied: { summary: 'Above what is left', value: DENIED_EXAMPLE } },
        },
      ),
      '400': problemResponse('A bad or unknown field, named in `invalidParams`; nothing is written.', {
        examples: {
          zeroAmount: {
            summary: 'amount 0',
            value: problemBody('validation_failed', 'invalid field(s): amount', '/refunds', {
              invalidParams: [{ name: 'amount', reason: 'must be greater than 0: a refund moves something' }],
            }),
          },
        },
      }),
      '404': problemResponse("No payment of this merchant matches `paymentReference` (another merchant's payment is the same 404)."),
      '409': problemResponse('The idempotency key was used for a different request.', {
        examples: {
          conflict: {
            summary: 'Key reused',
            value: problemBody(
              'refund_idempotency_conflict',
              'idempotencyKey k-1 was used for another refund request (refund 0d7a3c55-9d0f-4b8e-8f1e-1c2b3a4d5e6f)',
              '/refunds',
              {
                refundId: '0d7a3c55-9d0f-4b8e-8f1e-1c2b3a4d5e6f',
              },
            ),
          },
        },
      }),
      ...JSON_BODY_ERRORS,
      ...MERCHANT_KEY_ERRORS,
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
  get: {
    operationId: 'getRefund',
    summary: "One of the calling merchant's refunds",
    description: "The refund as it stands now (poll it while `pending`). Another merchant's refund is the same 404 as one that does not exist.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [uuidPathParameter('id', 'The refund id (`id` of the POST /refunds answer).')],
    responses: {
      '200': jsonResponse(REFUND_RESPONSE, { $ref: '#/components/schemas/Refund' }, { headers: NO_STORE_HEADERS, example: REFUND_EXAMPLE }),
      '400': problemResponse('The id is not a UUID.'),
      '404': problemResponse('No such refund of this merchant.'),
      ...MERCHANT_KEY_ERRORS,
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
  ofPayment: {
    operationId: 'listPaymentRefunds',
    summary: "The refunds of one of the calling merchant's payments",
    description: 'Every refund asked for the payment, oldest first, denied and failed ones included: `{data: [refund…]}`.',
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [uuidPathParameter('id', 'The payment id.')],
    responses: {
      '200': jsonResponse('The refunds.', { $ref: '#/components/schemas/RefundList' }, { headers: NO_STORE_HEADERS, example: { data: [REFUND_EXAMPLE] } }),
      '400': problemResponse('The id is not a UUID.'),
      '404': problemResponse('No such payment of this merchant.'),
      ...MERCHANT_KEY_ERRORS,
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
} satisfies Record<string, OperationDoc>;
