import type { OperationDoc } from './openapi';
import { jsonResponse, problemResponse } from './openapi-responses';
import { problemBody } from './problem';

/**
 * Components that more than one service's OpenAPI document has, written once; each service spreads the ones it
 * serves into its own (apps/<app>/src/openapi.components.ts).
 */

/** The answers of `GET /health` and `GET /ready`, which every service serves. */
export const HEALTH_SCHEMAS = {
  HealthResponse: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
  ReadyResponse: {
    type: 'object',
    required: ['status', 'checks'],
    additionalProperties: false,
    properties: {
      status: { const: 'ready' },
      checks: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description:
          'Check name → `ok` or `ok (<detail>)`. Facilitator: `database`, `redis` and one entry per configured network (CAIP-2 id → `ok (block N)`). Ledger: `database`, `redis`. Merchant agent: `facilitator`.',
      },
    },
  },
};

/** `GET /health`, the same in every service. */
export const LIVENESS_DOC = {
  operationId: 'health',
  summary: 'Liveness (all three services)',
  description:
    'Answers 200 `{"status":"ok"}` as long as the process runs and serves HTTP. It checks no dependency: a database, Redis, RPC or facilitator outage does not make it fail (see `GET /ready`), so an orchestrator restarting on a failed liveness probe never restarts healthy replicas because of an outage elsewhere.',
  responses: { '200': jsonResponse('The process is alive.', { $ref: '#/components/schemas/HealthResponse' }, { example: { status: 'ok' } }) },
} satisfies OperationDoc;

/** The merchant API key: the facilitator's, which the ledger takes too (it asks the facilitator whose key it is). */
export const MERCHANT_API_KEY_SCHEMES = {
  merchantApiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'mpk_<prefix>_<secret>',
    description:
      'A merchant API key, `mpk_` + 8 + `_` + 32 lowercase base32 characters, made with `node scripts/merchants.mjs` and shown once. Sent as `Authorization: Bearer <key>`.',
  },
  merchantApiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'The same key in `X-API-Key`, for clients that cannot set `Authorization`.',
  },
};

/** The answers to a missing, bad or over-used merchant API key, the same from the facilitator and the ledger. */
export const MERCHANT_API_KEY_RESPONSES = {
  RateLimited: problemResponse(
    'The API key used up its rate limit (a token bucket per key: `RATE_LIMIT_PER_MINUTE` tokens a minute, at most `RATE_LIMIT_BURST` at once, shared by all replicas through Redis). Retry after `Retry-After` seconds. If Redis is unreachable, requests are not limited. In open mode (`FACILITATOR_OPEN_MODE`), a request without a key is limited the same way per client address (`OPEN_MODE_RATE_LIMIT_PER_MINUTE`, `OPEN_MODE_RATE_LIMIT_BURST`).',
    {
      headers: { 'Retry-After': { description: 'Seconds until the key may send again (an integer ≥ 1).', schema: { type: 'integer', minimum: 1 } } },
      examples: {
        rateLimited: {
          summary: 'Too many requests with one key',
          value: problemBody('rate_limited', 'too many requests with this API key; retry in 20 s', '/settle', { retryAfter: 20 }),
        },
      },
    },
  ),
  Unauthorized: problemResponse(
    'No valid merchant API key: missing, malformed, unknown or revoked, or its merchant is disabled. The body is the same in every case, so it never tells whether a merchant or key exists. On /verify and /settle a request without any key is let through when the operator set `FACILITATOR_OPEN_MODE=true`.',
    {
      headers: { 'WWW-Authenticate': { description: 'Always `Bearer realm="facilitator"`.', schema: { type: 'string' } } },
      examples: { unauthorized: { summary: 'Missing or invalid API key', value: problemBody('unauthorized', 'a valid API key is required', '/settle') } },
    },
  ),
};

/** The ledger's reconciliation rows and summaries; the facilitator's document has them too, as it delivers the ledger's notices. */
export const RECONCILIATION_SCHEMAS = {
  ReconciliationRow: {
    type: 'object',
    required: ['key', 'kind', 'source', 'asset', 'entryKind', 'reference', 'occurredAt'],
    properties: {
      key: { type: 'string', description: 'Stable across runs: the same break found again has the same key.' },
      kind: { type: 'string', enum: ['matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund'] },
      source: { type: 'string', enum: ['chain', 'stripe'] },
      asset: { type: 'string' },
      entryKind: { type: 'string', enum: ['payment', 'refund', 'fee', 'gas'] },
      reference: { type: 'string', description: "`<txHash>:<logIndex>`, `pi_…`, `re_…`, `txn_…`, or the ledger's reference when there is no external entry." },
      occurredAt: { type: 'string', format: 'date-time' },
      ledger: {
        type: 'object',
        description: 'The ledger entry as corrected (amount = booking + corrections).',
        properties: {
          id: { type: 'string' },
          merchantId: { type: 'string' },
          source: { type: 'string' },
          asset: { type: 'string' },
          reference: { type: 'string' },
          kind: { type: 'string' },
          amount: {
            type: 'string',
            pattern: '^-?(0|[1-9][0-9]*)$',
            description: 'Atomic units as a decimal string (negative for net amounts flowing out, and differences).',
          },
          state: { type: 'string', enum: ['pending', 'posted'] },
          occurredAt: { type: 'string', format: 'date-time' },
          subscription: {
            type: 'object',
            description: "A subscription's charge: the subscription, the period it pays and which try it is, as the ledger recorded it.",
            required: ['id', 'periodIndex', 'attempt'],
            properties: { id: { type: 'string' }, periodIndex: { type: 'integer', minimum: 0 }, attempt: { type: 'integer', minimum: 0 } },
          },
        },
      },
      corrections: { type: 'array', items: { type: 'string' }, description: 'Ids of the correcting entries folded into `ledger`.' },
      external: {
        type: 'object',
        properties: {
          source: { type: 'string' },
          asset: { type: 'string' },
          reference: { type: 'string' },
          aliases: { type: 'array', items: { type: 'string' } },
          container: { type: 'string' },
          kind: { type: 'string' },
          amount: {
            type: 'string',
            pattern: '^-?(0|[1-9][0-9]*)$',
            description: 'Atomic units as a decimal string (negative for net amounts flowing out, and differences).',
          },
          occurredAt: { type: 'string', format: 'date-time' },
          details: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      difference: { type: 'string', pattern: '^-?(0|[1-9][0-9]*)$', description: 'amount_mismatch: external − ledger' },
      duplicateOf: { type: 'string', description: 'duplicate: the ledger entry id or external reference this one repeats.' },
      refunds: {
        type: 'array',
        items: { type: 'string' },
        description: 'over_refund: the ledger refunds of the payment (`reference`) that together exceed what it captured.',
      },
      captured: { type: 'string', pattern: '^(0|[1-9][0-9]*)$', description: 'over_refund: what the payment captured, atomic units.' },
      refunded: { type: 'string', pattern: '^(0|[1-9][0-9]*)$', description: 'over_refund: what the ledger refunded of it, atomic units.' },
    },
  },
  ReconciliationSummary: {
    type: 'object',
    required: ['period', 'generatedAt', 'rows', 'counts', 'breaks', 'ledgerEntries', 'externalEntries', 'corrections', 'scope'],
    properties: {
      period: { type: 'object', properties: { from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } } },
      generatedAt: { type: 'string', format: 'date-time' },
      rows: { type: 'integer' },
      counts: {
        type: 'object',
        required: ['matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund'],
        additionalProperties: { type: 'integer' },
      },
      breaks: { type: 'integer', description: 'Rows of the five break kinds.' },
      ledgerEntries: { type: 'integer' },
      externalEntries: { type: 'integer' },
      corrections: { type: 'integer', description: 'Correcting ledger entries folded into the entries they correct.' },
      scope: {
        type: 'object',
        required: ['reconciled', 'leftOut'],
        properties: {
          reconciled: { type: 'array', items: { type: 'string' }, description: '`source/kind` pairs compared.' },
          leftOut: { type: 'integer', description: 'Ledger entries of kinds no scan covers (e.g. chain gas), not reconciled.' },
        },
      },
      subscriptionEvents: {
        type: 'array',
        description:
          "The period's subscription events that moved no money (failed, refused and voided charge attempts, cancellations): shown in the report, never breaks. Absent when there are none.",
        items: {
          type: 'object',
          required: ['subscriptionId', 'kind', 'at', 'asset'],
          properties: {
            subscriptionId: { type: 'string' },
            kind: { type: 'string', enum: ['charge_failed', 'charge_refused', 'charge_voided', 'cancel_requested', 'canceled'] },
            at: { type: 'string', format: 'date-time' },
            asset: { type: 'string' },
            periodIndex: { type: 'integer' },
            attempt: { type: 'integer' },
            amount: { type: 'string', pattern: '^(0|[1-9][0-9]*)$' },
            detail: { type: 'string', description: 'The failure or refusal reason, or when and by whom a cancel was asked.' },
          },
        },
      },
    },
  },
};

/**
 * The x402 answers of the facilitator, which the merchant agent relays. X402Reason has no `enum` here: each service
 * adds the list the code has (`Object.values(X402Reason)`).
 */
export const X402_SCHEMAS = {
  AtomicAmount: {
    type: 'string',
    pattern: '^(0|[1-9][0-9]*)$',
    description:
      "A non-negative integer count of the asset's atomic units as a decimal string (no sign, no leading zeros, at most 2^256-1). Never a JSON number.",
    examples: ['10000'],
  },
  Bytes32: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$', description: '0x-prefixed 32 bytes of hex.' },
  Caip2: {
    type: 'string',
    pattern: '^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$',
    description: 'CAIP-2 chain id, e.g. `eip155:8453` (Base), `eip155:84532` (Base Sepolia), `eip155:31337` (local anvil).',
  },
  EvmAddress: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed 20-byte address. Mixed case must be a valid EIP-55 checksum.' },
  PaymentIdentifierExtension: {
    type: 'object',
    description:
      'The `payment-identifier` extension (x402 v2 only), `paymentPayload.extensions["payment-identifier"]`. Must be an object; its `info` is validated (`paymentIdentifierInfoSchema`, open for other members). An `id` binds to the first payload that /settle claims with it: the same id with the same payload gets the recorded outcome, the same id with a different payload gets 409 `payment_identifier_conflict` from /verify and /settle. `required: true` without an `id` is a 400. `schema` and other members are ignored.',
    additionalProperties: true,
    properties: { info: { $ref: '#/components/schemas/PaymentIdentifierInfo' }, schema: { type: 'object', additionalProperties: true } },
    examples: [{ info: { required: false, id: 'order_7f3c2a9e41b64d0c' }, schema: {} }],
  },
  SettleResponse: {
    type: 'object',
    description: 'Answer of POST /settle, always HTTP 200. `transaction` and `network` are always present.',
    required: ['success', 'transaction', 'network'],
    properties: {
      success: { type: 'boolean' },
      errorReason: { allOf: [{ $ref: '#/components/schemas/X402Reason' }], description: 'Present when `success` is false.' },
      errorMessage: { type: 'string', description: 'Human-readable detail, for logs; not stable.' },
      payer: { $ref: '#/components/schemas/EvmAddress' },
      transaction: {
        type: 'string',
        description:
          'The settlement transaction hash (0x + 64 hex), also on `settlement_pending` and on failures of a mined transaction; `""` when nothing was sent.',
      },
      network: {
        type: 'string',
        description:
          'The network exactly as `paymentRequirements.network` named it (a v1 name stays a v1 name); `""` only when the request could not be decoded far enough to read it.',
      },
      amount: {
        allOf: [{ $ref: '#/components/schemas/AtomicAmount' }],
        description: '`upto` only, on success: the amount actually charged (`"0"` when nothing was, with `transaction: ""`).',
      },
    },
  },
  X402Reason: {
    type: 'string',
    description:
      "Reason strings of `X402Reason` (libs/x402/src/reasons.ts), character for character those of @x402/core and @x402/evm 2.27. Clients must treat them as opaque. Where the facilitator emits each one:\n\n| reason | endpoint | when |\n|---|---|---|\n| `invalid_x402_version` | verify, settle | `paymentPayload.x402Version` is not 1 or 2, or the top-level `x402Version` differs from it (libs/x402/src/request.ts). No `payer` in the answer. |\n| `invalid_scheme` | never (reserved) | Defined for compatibility with @x402/core; the facilitator answers `unsupported_scheme` for an unknown requirements scheme instead. |\n| `unsupported_scheme` | verify, settle | `paymentRequirements.scheme` is neither `exact` nor `upto`. |\n| `invalid_network` | verify, settle | `paymentRequirements.network` (CAIP-2, or a v1 name in v1) is not a network this facilitator is configured for. |\n| `invalid_payload` | settle (fallback only) | Used only as a fallback when a verification failure carries no reason of its own; the current checks always name one, so it is not emitted in practice. |\n| `invalid_payment_requirements` | verify, settle | The `asset` is not on the network's asset allowlist, or (v2) `paymentPayload.accepted` differs from `paymentRequirements` in any of scheme, network, amount, asset, payTo, maxTimeoutSeconds or extra (the message lists them), or `maxTimeoutSeconds` is 0 (`exact`, `upto`, and `batch-settlement` deposits and vouchers: a payment needs time; the `batch-settlement` claims, settles and refunds a resource server sends on its own behalf carry 0 and are served). |\n| `unexpected_verify_error` | verify | The chain could not be reached (RPC down, timeout, HTTP error) or an unexpected exception stopped verification (logged). Never reported as a bad signature. Retry later. |\n| `unexpected_settle_error` | settle | The chain could not be reached while verifying or estimating gas, the settlement transaction could not be signed or handed over before it had a hash, or an unexpected exception occurred (logged). Nothing was broadcast; settling again is safe. |\n| `invalid_transaction_state` | never (reserved) | Defined for compatibility with @x402/core; not emitted. |\n| `settlement_pending` | settle | The settlement is not finished within SETTLE_BUDGET_MS. With a `transaction` hash: it was broadcast and has no receipt yet (or the receipt lookup failed); settle the same payload again to get the outcome. With `transaction: \"\"`: another request or replica holds the claim on this authorization and had not finished; retry shortly. Never a failure: do not ask the payer for a new authorization. |\n| `unsupported_payload_type` | verify, settle | An `exact` payload is a Permit2 authorization (`permit2Authorization`); `exact` accepts EIP-3009 only (Permit2 is served by `upto`). |\n| `asset_not_deployed_contract` | verify, settle | The configured asset address has no contract code on the network. |\n| `invalid_exact_evm_scheme` | verify, settle | The payload is for another scheme than the requirements (v1 `paymentPayload.scheme`, v2 `accepted.scheme`). |\n| `invalid_exact_evm_network_mismatch` | verify, settle | The payload is for another network than the requirements (v1 `paymentPayload.network`, v2 `accepted.network`). |\n| `invalid_exact_evm_missing_eip712_domain` | verify, settle | `paymentRequirements.extra` does not carry the token's EIP-712 domain as non-empty strings `name` and `version`. |\n| `invalid_exact_evm_recipient_mismatch` | verify, settle | `authorization.to` is not `paymentRequirements.payTo`. |\n| `invalid_exact_evm_signature` | verify, settle | The signature is not `authorization.from`'s over this authorization: native ECDSA recovery does not give `from`, and `from` is not a deployed ERC-1271 wallet that accepts it (an ERC-6492 wrapper around the signature of a deployed wallet is ignored). Also an ERC-6492 wrapper that names no factory call (zero factory or empty calldata) for an address without code, as in the reference. The digest uses the domain from `paymentRequirements.extra`, so a wrong EIP-712 name or version usually shows up here. Also mapped from a broadcast error that names an invalid signature. |\n| `invalid_exact_evm_payload_authorization_valid_before` | verify, settle | `validBefore` is less than now + 6 s (too late to settle safely); also mapped from a broadcast error about an expired authorization, and answered for a payment recorded as `expired`. |\n| `invalid_exact_evm_payload_authorization_valid_after` | verify, settle | `validAfter` is in the future; also mapped from a broadcast error saying the authorization is not yet valid. |\n| `invalid_exact_evm_authorization_value` | never (reserved) | Defined for compatibility with @x402/evm; value problems are answered with `invalid_exact_evm_payload_authorization_value_mismatch`. |\n| `invalid_exact_evm_payload_authorization_value_mismatch` | verify, settle | `authorization.value` is not exactly the required amount (`amount`, v1 `maxAmountRequired`); more is refused too. |\n| `invalid_exact_evm_transaction_failed` | settle | The settlement transaction was mined and reverted (`transaction` holds its hash), or the node refused it with an error that matches no more precise reason (`transaction: \"\"`, nothing sent). A facilitator hot wallet without gas money is not reported this way: the worker retries (possibly from another wallet) and logs an error, and the request answers `settlement_pending` until it succeeds. |\n| `invalid_exact_evm_transfer_event_mismatch` | settle | The transaction succeeded but its receipt has no `Transfer(from, to, value)` log of the asset with exactly the authorized values. |\n| `invalid_exact_evm_failed_to_parse_signature` | verify, settle | The signature ends with the ERC-6492 magic suffix but the wrapper cannot be decoded. |\n| `invalid_exact_evm_token_name_mismatch` | verify, settle | `extra.name` differs from the configured EIP-712 name of the asset (reached when the payer signed with that same wrong name). |\n| `invalid_exact_evm_token_version_mismatch` | verify, settle | `extra.version` differs from the configured EIP-712 version of the asset. |\n| `invalid_exact_evm_eip3009_not_supported` | verify, settle | The simulation failed and the token does not answer `authorizationState`: it does not implement EIP-3009. |\n| `invalid_exact_evm_nonce_already_used` | verify, settle | The authorization nonce is already used or canceled on chain. /settle also answers it when this authorization (same network, asset, payer, nonce) was already presented with a different payload (the message names the settling transaction, if any) or by another merchant (then nothing about that payment is told), and maps broadcast errors saying the authorization was used. |\n| `invalid_exact_evm_insufficient_balance` | verify, settle | The simulation failed and the payer's token balance is below the value. |\n| `invalid_exact_evm_transaction_simulation_failed` | verify, settle | The transfer would revert for another reason (/verify simulates with `eth_call`; /settle estimates gas from the chosen signer, which simulates the same call). For a counterfactual ERC-6492 wallet with an allowed factory this is also the answer when the inner signature is not the wallet's (the token checks it by ERC-1271 inside the simulated deploy + transfer; the reference answers the same), when the factory call does not deploy a wallet at `from`, or when Multicall3 is not deployed on the network. |\n| `invalid_exact_evm_payload_undeployed_smart_wallet` | never (reserved) | Defined for compatibility with @x402/evm; an undeployed ERC-6492 wallet is either settled (allowed factory) or answered with `eip6492_factory_not_allowed`. |\n| `eip6492_factory_not_allowed` | verify, settle | The signature is ERC-6492-wrapped, the payer's wallet is not deployed, and the wrapper's factory is not on the network's `eip6492AllowedFactories` (networks file; `FACILITATOR_EIP6492_FACTORIES` for the local chain; compared ignoring case). The list is empty by default, so every counterfactual wallet is refused (fail closed) until an operator allows its factory. Nothing is sent. |\n| `smart_wallet_deployment_failed` | never (reserved) | Defined for compatibility with @x402/evm (its separate deployment transaction reverted). Here the deployment and the transfer are one atomic Multicall3 transaction: if it reverts, the answer is `invalid_exact_evm_transaction_failed` and no wallet was deployed. |\n| `settlement_gas_exceeds_cap` | settle | Ours, not a reason of @x402/evm: the asset has a gas cap (`gasCap` in the networks file; `FACILITATOR_GAS_CAP_BPS` for the local chain) and the settlement's gas at the current fee, priced in the asset, would exceed that share of the payment. Nothing is written or sent. |\n| `pay_to_not_allowed` | verify, settle | Ours, not a reason of @x402/evm: the request carries a merchant API key, and `payTo` is not one of the receiving addresses that merchant declared for the network (`GET /merchants/me/receiving-addresses`; compared ignoring case), nor does the merchant allow any (`allowAnyPayTo`). Nothing is written or sent. Open mode (no key) is not checked. |\n| `invalid_upto_evm_scheme` | verify, settle | `upto`: the requirements or the payload (`accepted.scheme`) name another scheme than `upto`. |\n| `invalid_upto_evm_network_mismatch` | verify, settle | `upto`: the payload (`accepted.network`) is for another network than the requirements. |\n| `invalid_upto_evm_payload_settlement_exceeds_amount` | settle | `upto`: the amount to charge (`paymentRequirements.amount` at /settle) is above the permit's signed maximum. Nothing is written or sent. |\n| `invalid_upto_evm_transaction_failed` | settle | `upto`: the settlement transaction was mined and reverted, or shows no `Transfer` of exactly the charge from the payer to `payTo` (`transaction` holds its hash); or the node refused it for a reason no more precise code names. |\n| `upto_amount_exceeds_permitted` | settle | `upto`: the proxy reverted `AmountExceedsPermitted` (the charge is above the permit's maximum). |\n| `upto_unauthorized_facilitator` | settle | `upto`: the proxy reverted `UnauthorizedFacilitator` (sent from another wallet than `witness.facilitator`; the worker always sends from that one, so not expected). |\n| `upto_facilitator_mismatch` | verify, settle | `upto`: `witness.facilitator` is not one of this facilitator's signers on the network (`extra.facilitatorAddress` of `/supported` names the one to use). |\n| `invalid_permit2_spender` | verify, settle | `upto`: the permit's spender is not the x402 upto proxy `0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002`. |\n| `invalid_permit2_recipient_mismatch` | verify, settle | `upto`: `witness.to` is not `paymentRequirements.payTo`. |\n| `permit2_deadline_expired` | verify, settle | `upto`: the permit's deadline is less than now + 6 s; also answered for a charge recorded as `expired`. |\n| `permit2_not_yet_valid` | verify, settle | `upto`: `witness.validAfter` is in the future. |\n| `permit2_amount_mismatch` | verify, settle | `upto`: at /verify the permitted amount is not the requirements' `amount` (the maximum); at /settle it is not `accepted.amount`. |\n| `permit2_token_mismatch` | verify, settle | `upto`: `permitted.token` is not the requirements' `asset`. |\n| `invalid_permit2_signature` | verify, settle | `upto`: the signature is not the owner's over the Permit2 witness transfer (EOA, ERC-1271 or ERC-6492, domain `(\"Permit2\", chainId, 0x000000000022D473030F116dDEE9F6B43aC78BA3)`); also mapped from Permit2's signature and deadline reverts. |\n| `permit2_allowance_required` | verify, settle | `upto`: the simulation failed and the payer's ERC-20 allowance to Permit2 is below the amount: the payer must approve Permit2 once. |\n| `permit2_simulation_failed` | verify, settle | `upto`: the charge would revert for another reason (/verify simulates charging the maximum from `witness.facilitator`; /settle estimates the actual charge). |\n| `permit2_insufficient_balance` | verify, settle | `upto`: the simulation failed and the payer's balance is below the amount (at /verify the maximum: verify holds all of it). |\n| `permit2_proxy_not_deployed` | verify, settle | `upto`: the x402 upto proxy has no code on the network. |\n| `permit2_invalid_amount` | settle | `upto`: the proxy reverted `InvalidAmount` (a zero charge is answered success without a transaction, so not expected). |\n| `permit2_invalid_destination` | settle | `upto`: the proxy reverted `InvalidDestination` (a zero `witness.to`). |\n| `permit2_invalid_owner` | settle | `upto`: the proxy reverted `InvalidOwner` (a zero owner). |\n| `permit2_payment_too_early` | settle | `upto`: the proxy reverted `PaymentTooEarly` (before `witness.validAfter`). |\n| `permit2_invalid_nonce` | verify, settle | `upto`: the permit's nonce is spent on chain (charged, or invalidated by its owner). /settle also answers it when this permit was already presented with a different payload (another amount) or by another merchant. |",
    'x-emitted-by': {
      invalid_x402_version: 'verify, settle',
      invalid_scheme: 'never (reserved)',
      unsupported_scheme: 'verify, settle',
      invalid_network: 'verify, settle',
      invalid_payload: 'settle (fallback only)',
      invalid_payment_requirements: 'verify, settle',
      unexpected_verify_error: 'verify',
      unexpected_settle_error: 'settle',
      invalid_transaction_state: 'never (reserved)',
      settlement_pending: 'settle',
      unsupported_payload_type: 'verify, settle',
      asset_not_deployed_contract: 'verify, settle',
      invalid_exact_evm_scheme: 'verify, settle',
      invalid_exact_evm_network_mismatch: 'verify, settle',
      invalid_exact_evm_missing_eip712_domain: 'verify, settle',
      invalid_exact_evm_recipient_mismatch: 'verify, settle',
      invalid_exact_evm_signature: 'verify, settle',
      invalid_exact_evm_payload_authorization_valid_before: 'verify, settle',
      invalid_exact_evm_payload_authorization_valid_after: 'verify, settle',
      invalid_exact_evm_authorization_value: 'never (reserved)',
      invalid_exact_evm_payload_authorization_value_mismatch: 'verify, settle',
      invalid_exact_evm_transaction_failed: 'settle',
      invalid_exact_evm_transfer_event_mismatch: 'settle',
      invalid_exact_evm_failed_to_parse_signature: 'verify, settle',
      invalid_exact_evm_token_name_mismatch: 'verify, settle',
      invalid_exact_evm_token_version_mismatch: 'verify, settle',
      invalid_exact_evm_eip3009_not_supported: 'verify, settle',
      invalid_exact_evm_nonce_already_used: 'verify, settle',
      invalid_exact_evm_insufficient_balance: 'verify, settle',
      invalid_exact_evm_transaction_simulation_failed: 'verify, settle',
      invalid_exact_evm_payload_undeployed_smart_wallet: 'never (reserved)',
      eip6492_factory_not_allowed: 'verify, settle',
      smart_wallet_deployment_failed: 'never (reserved)',
      settlement_gas_exceeds_cap: 'settle',
      pay_to_not_allowed: 'verify, settle',
      invalid_upto_evm_scheme: 'verify, settle',
      invalid_upto_evm_network_mismatch: 'verify, settle',
      invalid_upto_evm_payload_settlement_exceeds_amount: 'settle',
      invalid_upto_evm_transaction_failed: 'settle',
      upto_amount_exceeds_permitted: 'settle',
      upto_unauthorized_facilitator: 'settle',
      upto_facilitator_mismatch: 'verify, settle',
      invalid_permit2_spender: 'verify, settle',
      invalid_permit2_recipient_mismatch: 'verify, settle',
      permit2_deadline_expired: 'verify, settle',
      permit2_not_yet_valid: 'verify, settle',
      permit2_amount_mismatch: 'verify, settle',
      permit2_token_mismatch: 'verify, settle',
      invalid_permit2_signature: 'verify, settle',
      permit2_allowance_required: 'verify, settle',
      permit2_simulation_failed: 'verify, settle',
      permit2_insufficient_balance: 'verify, settle',
      permit2_proxy_not_deployed: 'verify, settle',
      permit2_invalid_amount: 'settle',
      permit2_invalid_destination: 'settle',
      permit2_invalid_owner: 'settle',
      permit2_payment_too_early: 'settle',
      permit2_invalid_nonce: 'verify, settle',
    },
  },
};

/** How every webhook (the facilitator's payment events, the ledger's notices) is signed and acknowledged. */
export const WEBHOOK_DELIVERY = {
  parameters: [
    {
      name: 'Webhook-Id',
      in: 'header',
      required: true,
      schema: { type: 'string', format: 'uuid' },
      description: 'The delivery id (= body `id`), the same on every retry.',
    },
    {
      name: 'Webhook-Timestamp',
      in: 'header',
      required: true,
      schema: { type: 'string', pattern: '^[0-9]+$' },
      description: 'Unix seconds when this attempt was signed. Refuse values far from your clock (5 minutes) to stop replays.',
    },
    {
      name: 'Webhook-Signature',
      in: 'header',
      required: true,
      schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
      description:
        "Standard Webhooks (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the merchant's webhook secret `whsec_<base64>`; several space-separated signatures may be sent, one match is enough. Verify with any Standard Webhooks library, e.g. the `standardwebhooks` npm package: `new Webhook(secret).verify(rawBody, headers)` (it also checks the timestamp), or `verifyWebhookSignature` in `libs/clients/src/webhooks.ts`.",
    },
  ],
  responses: { '2XX': { description: 'Acknowledged; not sent again.' }, default: { description: 'Not acknowledged: retried later.' } },
};
