import { jsonResponse, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about MppTopUpController's route (see @ApiDoc). */
export const MPP_TOP_UP_DOCS = {
  topUp: {
    operationId: 'postMppBalanceTopUp',
    summary: 'Top up a prepaid balance with MPP (evm charge of MERCHANT_PREPAID_TOP_UP_AMOUNT)',
    description:
      "Served when MERCHANT_PREPAID_TOP_UP_AMOUNT is set. Without a credential: 402 with one `WWW-Authenticate: Payment` challenge (method `evm`, intent `charge`, the top-up amount of the token), bound to this route and to the body's digest. With `Authorization: Payment …`: the facilitator settles it, then the ledger credits the amount to the address that paid, once per payment; the metered A2A skill and MCP tool then draw on it. A body other than none or `{}` is refused with 400 before anything is charged. If the ledger does not answer after the payment settled: 503 `upstream_unavailable` with the Payment-Receipt; the same request with the same credential again is credited once and never charged twice.",
    parameters: [{ name: 'Authorization', in: 'header', required: false, schema: { type: 'string' }, description: '`Payment <base64url JSON credential>`.' }],
    requestBody: {
      required: false,
      content: {
        'application/json': {
          schema: { type: 'object', additionalProperties: false },
          example: {},
        },
      },
    },
    responses: {
      '200': jsonResponse(
        'Paid, settled and credited: the balance after the top-up.',
        {
          type: 'object',
          required: ['credited', 'paymentReference', 'balance'],
          properties: {
            credited: { type: 'string', description: 'atomic units of the token' },
            paymentReference: { type: 'string', description: 'the settlement transaction' },
            balance: {
              type: 'object',
              properties: {
                payer: { type: 'string' },
                asset: { type: 'string' },
                available: { type: 'string' },
                held: { type: 'string' },
                deposited: { type: 'string' },
                spent: { type: 'string' },
              },
            },
          },
        },
        {
          headers: { 'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON MppReceipt' } },
          example: {
            credited: '5000',
            paymentReference: '0x5b0e0bb1a1a4f1a4c5c0b7c9d3b1d2a0f8e7d6c5b4a39281706f5e4d3c2b1a09',
            balance: {
              payer: '0x976ea74026e726554db657fa54763abd0c3a0aa9',
              asset: 'eip155:31337/0x5fbdb2315678afecb367f032d93f642f64180aa3',
              available: '5000',
              held: '0',
              deposited: '5000',
              spent: '0',
            },
          },
        },
      ),
      '400': { description: "`validation_failed` (the body), or the facilitator's `bad-request` / `method-unsupported` with fresh challenges." },
      '402': { description: 'Payment required, or the credential was refused: problem+json and fresh challenges in WWW-Authenticate.' },
      '503': {
        description:
          '`upstream_unavailable`: the facilitator did not answer (nothing charged), or the ledger did not after the payment settled (send the same credential again).',
      },
    },
  },
} satisfies Record<string, OperationDoc>;
