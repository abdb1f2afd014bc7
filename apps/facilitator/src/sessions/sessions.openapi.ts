import { jsonResponse, NO_STORE_HEADERS, problemResponse, type OperationDoc } from '@mp/platform';
import { toProblemDetails } from '@mp/mpp';
import { JSON_BODY_ERRORS, KEY_OR_OPEN_MODE, MERCHANT_KEY_ERRORS } from '../openapi.shared';

const CHANNEL_ID = '0x5e1f0c3a9b7d2e4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f1a3c5e7b9d0f';
const RECEIPT = {
  method: 'evm',
  intent: 'session',
  status: 'success',
  timestamp: '2026-12-01T10:15:04.530Z',
  reference: CHANNEL_ID,
  challengeId: 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
  channelId: CHANNEL_ID,
  acceptedCumulative: '50000',
  spent: '30000',
  chainId: 84532,
  units: '10',
};

export const SESSIONS_DOCS = {
  charge: {
    operationId: 'chargeMppSession',
    summary: 'Charge an MPP evm session channel before delivering',
    description:
      "Raises the channel's `spent` by `amount`, before the merchant delivers, in one guarded SQL statement (`spent + amount ≤ acceptedCumulative`, so concurrent charges and other instances never overspend); the charge and its `channel.spent` event are written with it. `chargeId` is the idempotency key per channel: the same chargeId again never adds to `spent` and is answered with its first outcome (`repeated: true`); with another amount it is a 409. When the accepted vouchers do not cover it, the answer is 402 `session/insufficient-balance` carrying what the SSE `payment-need-voucher` event needs (`channelId`, `requiredCumulative`, `acceptedCumulative`, `deposit`): relay it, and charge again once /mpp/settle accepted the client's voucher.",
    security: KEY_OR_OPEN_MODE,
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/MppSessionCharge' } } } },
    responses: {
      '200': jsonResponse(
        'Charged (or the same chargeId again). `Payment-Receipt` (the session receipt with the new `spent`) is set as a header too.',
        { type: 'object' },
        {
          headers: { 'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON session receipt' } },
          example: {
            charged: true,
            repeated: false,
            channelId: CHANNEL_ID,
            chargeId: 'chunk-3',
            amount: '10000',
            units: '10',
            spent: '30000',
            acceptedCumulative: '50000',
            deposit: '1000000',
            receipt: RECEIPT,
            paymentReceipt: 'eyJtZXRob2QiOiJldm0ifQ',
          },
        },
      ),
      '400': problemResponse('`validation_failed`: the body is invalid.'),
      '402': {
        description: '`session/insufficient-balance`: a new voucher is needed; the members are the `payment-need-voucher` event data.',
        content: {
          'application/problem+json': {
            example: toProblemDetails('session/insufficient-balance', {
              detail: `channel ${CHANNEL_ID} has 0 accepted and unspent, the charge needs 10000`,
              extensions: { channelId: CHANNEL_ID, requiredCumulative: '60000', acceptedCumulative: '50000', deposit: '1000000' },
            }),
          },
        },
      },
      '404': problemResponse('No such channel of this merchant.'),
      '409': problemResponse('`session_charge_conflict`: the chargeId was charged on this channel for another amount.'),
      '410': problemResponse('`session/channel-finalized`: the channel is closing or closed.'),
      ...JSON_BODY_ERRORS,
      ...MERCHANT_KEY_ERRORS,
    },
  },
  channel: {
    operationId: 'getMppSessionChannel',
    summary: "An MPP evm session channel's state",
    description:
      'Deposit, accepted cumulative voucher, spent, settled on chain, what can still be charged (`available`), and the state: `open`, `closing` (a close is under way or the payer requested close on chain), `closed` (finalized on chain).',
    security: KEY_OR_OPEN_MODE,
    parameters: [{ name: 'channelId', in: 'path', required: true, schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' } }],
    responses: {
      '200': jsonResponse('The channel.', { type: 'object' }, { headers: NO_STORE_HEADERS }),
      '400': problemResponse('The channel id is not 32 bytes of hex.'),
      '404': problemResponse('No such channel of this merchant.'),
      ...MERCHANT_KEY_ERRORS,
    },
  },
} satisfies Record<string, OperationDoc>;
