import { MERCHANT_API_KEY_SECURITY } from '@mp/platform';

/** What the facilitator's routes say alike in the OpenAPI document (see their *.openapi.ts). */

/** The errors of every route behind a merchant API key, besides its own. */
export const MERCHANT_KEY_ERRORS = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '429': { $ref: '#/components/responses/RateLimited' },
  '500': { $ref: '#/components/responses/InternalError' },
};

/** The errors of every route that reads a JSON body, besides its own. */
export const JSON_BODY_ERRORS = { '413': { $ref: '#/components/responses/PayloadTooLarge' }, '415': { $ref: '#/components/responses/UnsupportedMediaType' } };

/** The x402 and MPP routes take a merchant API key, or none when the operator runs in open mode (FACILITATOR_OPEN_MODE). */
export const KEY_OR_OPEN_MODE = [...MERCHANT_API_KEY_SECURITY, {}];

/** The payment of the examples (GET /payments, the webhooks): confirmed on Base Sepolia. */
export const PAYMENT_EXAMPLE = {
  id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
  state: 'confirmed',
  protocol: 'x402',
  rail: 'evm',
  network: 'eip155:84532',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
  payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
  amount: '10000',
  nonce: '0x951710b936e8ec0b7657d42b457a25dd7c0d92b9be38f3d0cb8972e16ac881a3',
  scheme: 'exact',
  x402Version: 2,
  challengeId: null,
  reference: null,
  paymentIdentifier: 'order_7f3c2a9e41b64d0c',
  txHash: '0x68e5b1a3c9d0f2e4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d82f6c',
  errorReason: null,
  errorMessage: null,
  createdAt: '2026-12-01T10:15:02.114Z',
  updatedAt: '2026-12-01T10:15:04.530Z',
  settledAt: '2026-12-01T10:15:04.530Z',
};
