import { NO_STORE_HEADERS, jsonResponse, type OperationDoc } from '@mp/platform';
import { toProblemDetails, type ProblemCode as MppProblemCode } from '@mp/mpp';
import { JSON_BODY_ERRORS, KEY_OR_OPEN_MODE, MERCHANT_KEY_ERRORS } from '../openapi.shared';

// the examples' terms (an evm and a stripe offer for one route) and the fresh challenge a payment problem carries
const TERMS = {
  realm: 'shop.example',
  offers: [
    {
      method: 'evm',
      intent: 'charge',
      request: {
        amount: '25000',
        currency: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        recipient: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
        methodDetails: { chainId: 84532 },
      },
    },
    {
      method: 'stripe',
      intent: 'charge',
      request: { amount: '50', currency: 'usd', methodDetails: { networkId: 'profile_61RtXqZc5eYd3NkbB', paymentMethodTypes: ['card'] } },
    },
  ],
  opaque: { resource: 'POST /mpp/forecast' },
};
// the evm offer's request as the facilitator makes it canonical (what its challenges carry)
const CANONICAL_EVM_REQUEST = {
  amount: '25000',
  currency: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  methodDetails: { chainId: 84532, credentialTypes: ['authorization'], decimals: 6 },
  recipient: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
};
const FRESH_CHALLENGES = [
  {
    id: 'Zr3c8bQeLk0a9Vt2yPu6sWm1xNj4hGf7dCo5iEb8aKq',
    realm: 'shop.example',
    method: 'evm',
    intent: 'charge',
    request: CANONICAL_EVM_REQUEST,
    expires: '2026-12-01T10:20:00Z',
    opaque: 'eyJfbm9uY2UiOiJ6OXk4eDd3NnY1dTR0M3MyIiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ',
  },
];

/** A problem of the Payment scheme as the facilitator answers it: with fresh challenges for the same terms. */
function schemeProblem(code: MppProblemCode, detail: string, challengeId?: string) {
  return toProblemDetails(code, { detail, challengeId, extensions: { challenges: FRESH_CHALLENGES } });
}

/** The body of /mpp/challenges and of /mpp/issuance: a route's terms. */
function termsRequestBody(examples: Record<string, { summary: string; value: unknown }>) {
  return { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/MppTerms' }, examples } } };
}

/** The body of /mpp/verify and of /mpp/settle. */
const CREDENTIAL_REQUEST_BODY = {
  required: true,
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/MppCredentialRequest' },
      examples: {
        evm: {
          summary: 'An mppx evm credential for the forecast route',
          value: {
            credential:
              'Payment eyJjaGFsbGVuZ2UiOnsiZXhwaXJlcyI6IjIwMjYtMTItMDFUMTA6MjA6MDBaIiwiaWQiOiJxMFFtUzNvMHY4emp2N2Y5d08wZlkxYjJtSjBIazdKejJsMXFrSHEzYzFNIiwiaW50ZW50IjoiY2hhcmdlIiwibWV0aG9kIjoiZXZtIiwicmVhbG0iOiJzaG9wLmV4YW1wbGUifSwicGF5bG9hZCI6e319',
            terms: TERMS,
          },
        },
      },
    },
  },
};

/** The 400 of /mpp/verify and /mpp/settle: ours, or the Payment scheme's with fresh challenges. */
const SCHEME_BAD_REQUEST = {
  description: "Our own 400 (`validation_failed`: invalid terms or body) or the scheme's `method-unsupported` / `bad-request` (with fresh challenges).",
  content: {
    'application/problem+json': {
      schema: { oneOf: [{ $ref: '#/components/schemas/Problem' }, { $ref: '#/components/schemas/MppProblem' }] },
      examples: {
        methodUnsupported: {
          summary: 'The route does not take this method',
          value: schemeProblem(
            'method-unsupported',
            'stripe/charge is not accepted here (accepted: evm/charge)',
            'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
          ),
        },
        twoCredentials: { summary: 'Two credentials in one field', value: schemeProblem('bad-request', 'more than one Payment credential') },
      },
    },
  },
};

/** The 402 of /mpp/verify and /mpp/settle: a problem of the Payment scheme, with fresh challenges. */
const PAYMENT_PROBLEM = {
  description: 'A payment problem, with fresh challenges: relay it.',
  headers: {
    'WWW-Authenticate': {
      description: 'One field per fresh challenge.',
      schema: { type: 'string' },
      example:
        'Payment id="q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M", realm="shop.example", method="evm", intent="charge", request="eyJhbW91bnQiOiIyNTAwMCIsImN1cnJlbmN5IjoiMHgwMzZDYkQ1Mzg0MmM1NDI2NjM0ZTc5Mjk1NDFlQzIzMThmM2RDRjdlIiwibWV0aG9kRGV0YWlscyI6eyJjaGFpbklkIjo4NDUzMiwiY3JlZGVudGlhbFR5cGVzIjpbImF1dGhvcml6YXRpb24iXSwiZGVjaW1hbHMiOjZ9LCJyZWNpcGllbnQiOiIweENkYUY1NDVmMDNEOGRBMDFDMjk4ZDg2MDRmMjlkNGM4MDQ5M2Y2YjIifQ", expires="2026-12-01T10:20:00Z", opaque="eyJfbm9uY2UiOiJoM2k0bTVuNm83cDhxOXIwIiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ"',
    },
    ...NO_STORE_HEADERS,
  },
  content: {
    'application/problem+json': {
      schema: { $ref: '#/components/schemas/MppProblem' },
      examples: {
        invalidChallenge: {
          summary: 'Already used, or issued for other terms',
          value: schemeProblem('invalid-challenge', 'this challenge has already been used', 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M'),
        },
        expired: {
          summary: 'The challenge expired',
          value: schemeProblem('payment-expired', 'challenge expired at 2026-12-01T10:20:00Z', 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M'),
        },
        verificationFailed: {
          summary: 'Stripe declined',
          value: schemeProblem(
            'verification-failed',
            'Stripe declined the payment: Your card was declined. (generic_decline)',
            'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
          ),
        },
        insufficient: {
          summary: 'Pays less than asked',
          value: schemeProblem(
            'payment-insufficient',
            'the authorization is for 1, the challenge asks for 25000',
            'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
          ),
        },
        malformed: { summary: 'Not a credential', value: schemeProblem('malformed-credential', 'credential is not base64url-encoded JSON') },
        actionRequired: {
          summary: '3-D Secure required',
          value: schemeProblem(
            'payment-action-required',
            'PaymentIntent pi_3QwErTyUiOpAsDfGh1234567 requires customer action (use_stripe_sdk); a machine payment cannot complete it',
            'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
          ),
        },
      },
    },
  },
};

/** What the OpenAPI document says about MppController's routes (see @ApiDoc). */
export const MPP_DOCS = {
  supported: {
    operationId: 'getMppSupported',
    summary: 'The MPP methods this facilitator settles',
    description:
      '`evm` always (on the networks and assets of GET /supported), with intent `subscription` besides `charge` when SUBSCRIPTION_SEALING_KEYS is set (our EXPERIMENTAL evm profile); `stripe` when STRIPE_SECRET_KEY is set, with intent `subscription` too when SUBSCRIPTION_SEALING_KEYS is also set (the draft Stripe profile).',
    security: KEY_OR_OPEN_MODE,
    responses: {
      '200': jsonResponse(
        'The methods and intents.',
        { $ref: '#/components/schemas/MppSupportedResponse' },
        {
          example: {
            methods: [
              { method: 'evm', intents: ['charge'] },
              { method: 'stripe', intents: ['charge'] },
            ],
          },
        },
      ),
      ...MERCHANT_KEY_ERRORS,
    },
  },
  challenges: {
    operationId: 'issueMppChallenges',
    summary: "Issue MPP challenges for a route's terms",
    description:
      "One challenge per offer, each bound by HMAC-SHA256 with the calling merchant's own secret (made on first use, 32 random bytes; open mode has one of its own) and a random `_nonce` in `opaque`, so every challenge is unique. Nothing is stored: the id proves issuance. Send the `wwwAuthenticate` values with your 402, one field each.",
    security: KEY_OR_OPEN_MODE,
    requestBody: termsRequestBody({ evmAndStripe: { summary: 'Both methods for one route', value: TERMS } }),
    responses: {
      '201': jsonResponse(
        'The challenges.',
        { $ref: '#/components/schemas/MppIssuedChallenges' },
        {
          example: {
            challenges: [
              {
                id: 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
                realm: 'shop.example',
                method: 'evm',
                intent: 'charge',
                request: CANONICAL_EVM_REQUEST,
                expires: '2026-12-01T10:20:00Z',
                opaque: 'eyJfbm9uY2UiOiJoM2k0bTVuNm83cDhxOXIwIiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ',
              },
              {
                id: 'Hn0dQ2Vx8c4m5o6p7q8r9s0t1u2v3w4x5y6z7A8B9C0',
                realm: 'shop.example',
                method: 'stripe',
                intent: 'charge',
                request: { amount: '50', currency: 'usd', methodDetails: { networkId: 'profile_61RtXqZc5eYd3NkbB', paymentMethodTypes: ['card'] } },
                expires: '2026-12-01T10:20:00Z',
                opaque: 'eyJfbm9uY2UiOiJhMWIyYzNkNGU1ZjZnN2g4IiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ',
              },
            ],
            wwwAuthenticate: [
              'Payment id="q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M", realm="shop.example", method="evm", intent="charge", request="eyJhbW91bnQiOiIyNTAwMCIsImN1cnJlbmN5IjoiMHgwMzZDYkQ1Mzg0MmM1NDI2NjM0ZTc5Mjk1NDFlQzIzMThmM2RDRjdlIiwibWV0aG9kRGV0YWlscyI6eyJjaGFpbklkIjo4NDUzMiwiY3JlZGVudGlhbFR5cGVzIjpbImF1dGhvcml6YXRpb24iXSwiZGVjaW1hbHMiOjZ9LCJyZWNpcGllbnQiOiIweENkYUY1NDVmMDNEOGRBMDFDMjk4ZDg2MDRmMjlkNGM4MDQ5M2Y2YjIifQ", expires="2026-12-01T10:20:00Z", opaque="eyJfbm9uY2UiOiJoM2k0bTVuNm83cDhxOXIwIiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ"',
              'Payment id="Hn0dQ2Vx8c4m5o6p7q8r9s0t1u2v3w4x5y6z7A8B9C0", realm="shop.example", method="stripe", intent="charge", request="eyJhbW91bnQiOiI1MCIsImN1cnJlbmN5IjoidXNkIiwibWV0aG9kRGV0YWlscyI6eyJuZXR3b3JrSWQiOiJwcm9maWxlXzYxUnRYcVpjNWVZZDNOa2JCIiwicGF5bWVudE1ldGhvZFR5cGVzIjpbImNhcmQiXX19", expires="2026-12-01T10:20:00Z", opaque="eyJfbm9uY2UiOiJhMWIyYzNkNGU1ZjZnN2g4IiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ"',
            ],
          },
        },
      ),
      '400': { $ref: '#/components/responses/BadRequest' },
      ...MERCHANT_KEY_ERRORS,
      ...JSON_BODY_ERRORS,
    },
  },
  issuance: {
    operationId: 'getMppChallengeIssuance',
    summary: "What a merchant needs to issue a route's MPP challenges itself",
    description:
      "The calling merchant's issuer key (HMAC-SHA256 of its secret, so the secret never leaves the facilitator), the route's offers made canonical as `/mpp/challenges` would issue them, and the default lifetime of a challenge. A challenge bound with the issuer key (`issueChallenges` of `@mp/mpp`: the facilitator's own issuance, field for field) is accepted by `/mpp/verify` and `/mpp/settle` like one from `/mpp/challenges`, so a 402 needs no call here. Rotating the merchant's secret rotates the key; the previous key stays accepted for an hour, as the previous secret does. Keep the key as you keep your API key: it lets its holder issue challenges for you, which the API key does too. `digest`, `opaque`, `expiresIn` and `header` of the terms are not needed here; give them to `issueChallenges` per request.",
    security: KEY_OR_OPEN_MODE,
    requestBody: termsRequestBody({ evm: { summary: 'One evm offer', value: { realm: TERMS.realm, offers: [TERMS.offers[0]] } } }),
    responses: {
      '200': jsonResponse(
        'The issuer key and the canonical offers.',
        { $ref: '#/components/schemas/MppChallengeIssuance' },
        {
          example: {
            issuerKey: 'Z0b9yQxJ6m3c1rY8wqK2s7pV4nH5tL0eA3dF6gJ9kMo',
            realm: 'shop.example',
            offers: [
              {
                method: 'evm',
                intent: 'charge',
                request: CANONICAL_EVM_REQUEST,
              },
            ],
            challengeTtlSeconds: 300,
          },
        },
      ),
      '400': { $ref: '#/components/responses/BadRequest' },
      ...MERCHANT_KEY_ERRORS,
      ...JSON_BODY_ERRORS,
    },
  },
  verify: {
    operationId: 'verifyMppCredential',
    summary: 'Check an MPP credential without settling it',
    description:
      "Parses the credential, checks the HMAC binding under this merchant's secret or its issuer key (and the previous ones for an hour after a rotation), expiry, that the challenge was issued for these terms, that it is unused, and the method's own checks: evm verifies the signature and simulates the transfer; stripe looks the Shared Payment Token up. Claims nothing.",
    security: KEY_OR_OPEN_MODE,
    requestBody: CREDENTIAL_REQUEST_BODY,
    responses: {
      '200': jsonResponse(
        'The credential would settle now.',
        { $ref: '#/components/schemas/MppVerifyResponse' },
        {
          example: {
            valid: true,
            challengeId: 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
            method: 'evm',
            intent: 'charge',
            payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
          },
        },
      ),
      '400': SCHEME_BAD_REQUEST,
      ...MERCHANT_KEY_ERRORS,
      '402': PAYMENT_PROBLEM,
      ...JSON_BODY_ERRORS,
    },
  },
  settle: {
    operationId: 'settleMppCredential',
    summary: 'Settle an MPP credential, exactly once',
    description:
      "The checks of /mpp/verify, then the challenge is claimed in PostgreSQL (one INSERT: of concurrent requests with one credential exactly one proceeds; a challenge used by another credential is `invalid-challenge`), then settled by its method: `evm` through the x402 settlement engine (same exactly-once record, signer pool and recovery; the payment is recorded with protocol `mpp`), `stripe` by one confirmed PaymentIntent with idempotency key `mpp_<challengeId>_<spt>`. Every settled payment emits the same outbox events and webhooks as an x402 one. If the outcome is unknown (RPC or Stripe unreachable, a Stripe 5xx, `409 idempotency_key_in_use` or `idempotency_error`, settlement past SETTLE_BUDGET_MS), the answer is 500 `internal-payment-error` and the same credential may be sent again: it drives the same settlement, never a second one. The same credential sent again after it settled gets the original answer: 200 with the same receipt (same `reference`, `timestamp` and `Payment-Receipt`), also after the challenge expired; after a failure, the same problem; while another request settles it, that request's outcome (waiting up to SETTLE_BUDGET_MS). Another credential for the same challenge is `invalid-challenge`. Intent `subscription` (method `evm`, EXPERIMENTAL): the credential carries one EIP-3009 authorization per period until `subscriptionExpires`; all are verified, the subscription, its authorizations (sealed at rest) and its period 0 payment are recorded in one transaction, period 0 settles as an evm charge does, and the receipt carries `subscriptionId`. Intent `subscription` (method `stripe`): payload `{paymentMethod, customer?}`; a Customer (or the payer's), the Price and a Stripe subscription (charge_automatically, error_if_incomplete, no prorations) are made, its first invoice must be paid at once and is validated, and the receipt's `reference` is that invoice with `subscriptionId` and `stripeSubscription`; a first invoice Stripe cannot collect is a 402 with a fresh challenge and nothing kept. Renewals are the ledger's to ask for (queue `subscription-commands`); on Stripe a period counts only from its validated paid invoice (`invoice.paid`).",
    security: KEY_OR_OPEN_MODE,
    requestBody: CREDENTIAL_REQUEST_BODY,
    responses: {
      '200': jsonResponse(
        'Settled. `Payment-Receipt` and `Cache-Control: private` are set as response headers too: pass them on with your 2xx.',
        { $ref: '#/components/schemas/MppSettleResponse' },
        {
          headers: {
            'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON MppReceipt' },
            'Cache-Control': { schema: { type: 'string', const: 'private' } },
          },
          example: {
            success: true,
            receipt: {
              status: 'success',
              method: 'evm',
              timestamp: '2026-12-01T10:15:04.530Z',
              reference: '0x68e5b1a3c9d0f2e4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d82f6c',
              challengeId: 'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
            },
            paymentReceipt: 'eyJzdGF0dXMiOiJzdWNjZXNzIiwibWV0aG9kIjoiZXZtIn0',
            payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
          },
        },
      ),
      '400': SCHEME_BAD_REQUEST,
      '402': PAYMENT_PROBLEM,
      ...JSON_BODY_ERRORS,
      ...MERCHANT_KEY_ERRORS,
      '500': {
        description:
          '`internal-payment-error` (the outcome is not known yet; retry the same credential) or, for our own failures, a `urn:problem:internal_error` problem.',
        content: {
          'application/problem+json': {
            schema: { oneOf: [{ $ref: '#/components/schemas/MppProblem' }, { $ref: '#/components/schemas/Problem' }] },
            examples: {
              unknownOutcome: {
                summary: 'Stripe unreachable',
                value: schemeProblem(
                  'internal-payment-error',
                  'Stripe is unavailable (An error occurred with our connection to Stripe.); retry with the same credential',
                  'q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M',
                ),
              },
            },
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
