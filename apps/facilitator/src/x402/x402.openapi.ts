import { jsonResponse, type OperationDoc } from '@mp/platform';
import { JSON_BODY_ERRORS, KEY_OR_OPEN_MODE, MERCHANT_KEY_ERRORS } from '../openapi.shared';

// the examples' payment: 0.01 USDC on Base Sepolia, authorized with EIP-3009
const REQUIREMENTS = {
  scheme: 'exact',
  network: 'eip155:84532',
  amount: '10000',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
  maxTimeoutSeconds: 120,
  extra: { name: 'USDC', version: '2' },
};
const EXACT_PAYLOAD = {
  signature: '0x34ed68ac0b70836eea32d6006d3724358f3144af1bf7c2f03d61e394bc796da33cad6df999156854bce951820f6be13c4d0982c691a8e100af6ce3664279e2181c',
  authorization: {
    from: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
    to: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
    value: '10000',
    validAfter: '0',
    validBefore: '1798761600',
    nonce: '0x951710b936e8ec0b7657d42b457a25dd7c0d92b9be38f3d0cb8972e16ac881a3',
  },
};
const V2_PAYLOAD = {
  x402Version: 2,
  resource: { url: 'https://weather.example/paid/forecast', description: 'A machine-readable weather forecast', mimeType: 'application/json' },
  accepted: REQUIREMENTS,
  payload: EXACT_PAYLOAD,
};

/** The body of /verify and of /settle. */
const FACILITATOR_REQUEST_BODY = {
  required: true,
  content: {
    'application/json': {
      schema: { $ref: '#/components/schemas/FacilitatorRequest' },
      examples: {
        v2: { summary: 'x402 v2, USDC on Base Sepolia', value: { x402Version: 2, paymentPayload: V2_PAYLOAD, paymentRequirements: REQUIREMENTS } },
        v2WithPaymentIdentifier: {
          summary: 'x402 v2 with the payment-identifier extension',
          value: {
            x402Version: 2,
            paymentPayload: { ...V2_PAYLOAD, extensions: { 'payment-identifier': { info: { required: false, id: 'order_7f3c2a9e41b64d0c' }, schema: {} } } },
            paymentRequirements: REQUIREMENTS,
          },
        },
        v1: {
          summary: 'x402 v1 (named network, maxAmountRequired)',
          value: {
            x402Version: 1,
            paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload: EXACT_PAYLOAD },
            paymentRequirements: {
              scheme: 'exact',
              network: 'base-sepolia',
              maxAmountRequired: '10000',
              resource: 'https://weather.example/paid/forecast',
              description: 'A machine-readable weather forecast',
              mimeType: 'application/json',
              payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
              maxTimeoutSeconds: 120,
              asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
              extra: { name: 'USDC', version: '2' },
            },
          },
        },
      },
    },
  },
};

/** What the OpenAPI document says about X402Controller's routes (see @ApiDoc). */
export const X402_DOCS = {
  verify: {
    operationId: 'verify',
    summary: 'Verify an x402 payment without settling it',
    description:
      "Runs every check the reference facilitator runs, in its order, with the same reason strings: scheme, network, asset allowlist, payload shape and `accepted` == requirements (no chain access), then the signature (native secp256k1 recovery for EOAs; ERC-1271 `isValidSignature` only when recovery fails and `from` has code, also for an ERC-6492-wrapped signature of a wallet that is already deployed; a counterfactual ERC-6492 wallet is refused with `eip6492_factory_not_allowed` unless its factory is on the network's `eip6492AllowedFactories`, and otherwise its signature is checked by the simulation), recipient, `validBefore ≥ now + 6 s`, `validAfter ≤ now`, exact value, asset has code (cached), EIP-712 name and version against the configured asset, and finally one `eth_call` simulation of `transferWithAuthorization` (for a counterfactual wallet: of Multicall3 `aggregate3` calling the factory, then `transferWithAuthorization` with the inner signature, which the token checks by ERC-1271 on the just-deployed wallet). Only when the simulation fails does it read `authorizationState` and `balanceOf` to name the reason. A payment every check and the simulation accept is not recovered natively (the token checked its signature inside the simulation); the signature is checked whenever something refuses the payment, before that refusal is answered, so the reason is the one this order gives.\n\nWrites nothing. With a payment-identifier it only checks that the id is not bound to another payload (409). RPC failures are `unexpected_verify_error`, never an invalid signature.\n\n**Authentication.** A merchant API key (`Authorization: Bearer mpk_…` or `X-API-Key`), unless the operator runs with `FACILITATOR_OPEN_MODE=true`; a key that is sent is always checked (401 if it is not valid) and counts against its rate limit (429).",
    requestBody: FACILITATOR_REQUEST_BODY,
    responses: {
      '200': jsonResponse(
        'The verdict (valid or not): always 200.',
        { $ref: '#/components/schemas/VerifyResponse' },
        {
          examples: {
            valid: { summary: 'Valid payment', value: { isValid: true, payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e' } },
            insufficientBalance: {
              summary: 'Payer lacks the funds',
              value: {
                isValid: false,
                invalidReason: 'invalid_exact_evm_insufficient_balance',
                invalidMessage: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e holds 0 of USDC, less than 10000 (ERC20: transfer amount exceeds balance)',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
              },
            },
            expired: {
              summary: 'Authorization expires too soon',
              value: {
                isValid: false,
                invalidReason: 'invalid_exact_evm_payload_authorization_valid_before',
                invalidMessage: 'the authorization expires at 1798761600, too soon to settle (now 1798761597)',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
              },
            },
            nonceUsed: {
              summary: 'Authorization already used on chain',
              value: {
                isValid: false,
                invalidReason: 'invalid_exact_evm_nonce_already_used',
                invalidMessage:
                  'authorization nonce 0x951710b936e8ec0b7657d42b457a25dd7c0d92b9be38f3d0cb8972e16ac881a3 of 0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e is already used or canceled (FiatTokenV2: authorization is used or canceled)',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
              },
            },
            permit2: {
              summary: 'Permit2 payload (not supported yet)',
              value: {
                isValid: false,
                invalidReason: 'unsupported_payload_type',
                invalidMessage: 'Permit2 payloads are not accepted by this facilitator yet; sign an EIP-3009 authorization',
              },
            },
            badVersion: {
              summary: 'Unknown x402 version',
              value: { isValid: false, invalidReason: 'invalid_x402_version', invalidMessage: 'x402Version 3 is not supported; use 1 or 2' },
            },
            rpcDown: {
              summary: 'The chain RPC is unreachable',
              value: {
                isValid: false,
                invalidReason: 'unexpected_verify_error',
                invalidMessage: 'the chain could not be reached: fetch failed',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
              },
            },
          },
        },
      ),
      '400': { $ref: '#/components/responses/BadRequest' },
      ...MERCHANT_KEY_ERRORS,
      '409': { $ref: '#/components/responses/PaymentIdentifierConflict' },
      ...JSON_BODY_ERRORS,
    },
    security: KEY_OR_OPEN_MODE,
  },
  settle: {
    operationId: 'settle',
    summary: 'Settle an x402 payment on chain, exactly once',
    description:
      "Verifies again (without the `eth_call`; gas estimation from the chosen signer simulates the same call), then claims the payment in PostgreSQL, unique per (network, asset, payer, authorization nonce), records the signed transaction's hash before broadcasting it, and waits for the receipt up to SETTLE_BUDGET_MS (default 60 s). The transaction calls the token's `transferWithAuthorization`; for a counterfactual ERC-6492 wallet whose factory is allowed it is one Multicall3 `aggregate3` call that runs the factory call (allowed to fail: someone may have deployed the wallet meanwhile) and then the transfer (must not fail), so the wallet is deployed if and only if the payment lands. A successful receipt must contain the exact `Transfer(from, to, value)` log of the token.\n\nIdempotent: settling the same payload again (same fingerprint) returns the recorded outcome (the same `transaction`) and sends nothing; concurrent duplicates, in one process or on several replicas, share one settlement. The same authorization with a different payload is `invalid_exact_evm_nonce_already_used`. Past the budget the answer is `settlement_pending` with the hash: settle the same payload again to get the outcome.\n\n**Authentication.** A merchant API key (`Authorization: Bearer mpk_…` or `X-API-Key`), unless the operator runs with `FACILITATOR_OPEN_MODE=true`; a key that is sent is always checked (401 if it is not valid) and counts against its rate limit (429). The settled payment belongs to the key's merchant (open mode without a key: to no merchant). Presenting a payload that another merchant (or an open-mode request) already presented answers `invalid_exact_evm_nonce_already_used` with `transaction: \"\"`, and never that payment's outcome or hash.",
    requestBody: FACILITATOR_REQUEST_BODY,
    responses: {
      '200': jsonResponse(
        'The settlement outcome: always 200.',
        { $ref: '#/components/schemas/SettleResponse' },
        {
          examples: {
            success: {
              summary: 'Settled (also the answer to every replay)',
              value: {
                success: true,
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                network: 'eip155:84532',
              },
            },
            successV1: {
              summary: 'Settled, x402 v1 (network stays the v1 name)',
              value: {
                success: true,
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                network: 'base-sepolia',
              },
            },
            pending: {
              summary: 'Broadcast, receipt not in yet (settle again for the outcome)',
              value: {
                success: false,
                errorReason: 'settlement_pending',
                errorMessage: 'the transaction is not mined yet; settle again to get its outcome',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                network: 'eip155:84532',
              },
            },
            pendingOtherOwner: {
              summary: 'Another request or replica holds the claim',
              value: {
                success: false,
                errorReason: 'settlement_pending',
                errorMessage: 'another request is settling this payment; retry shortly',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '',
                network: 'eip155:84532',
              },
            },
            insufficientBalance: {
              summary: 'Invalid payment: nothing sent',
              value: {
                success: false,
                errorReason: 'invalid_exact_evm_insufficient_balance',
                errorMessage: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e holds 0 of USDC, less than 10000 (ERC20: transfer amount exceeds balance)',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '',
                network: 'eip155:84532',
              },
            },
            differentPayload: {
              summary: 'This authorization was already settled with another payload',
              value: {
                success: false,
                errorReason: 'invalid_exact_evm_nonce_already_used',
                errorMessage:
                  'this authorization was already presented with a different payload and settled by 0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '',
                network: 'eip155:84532',
              },
            },
            transferMismatch: {
              summary: 'Mined, but the receipt does not show the transfer',
              value: {
                success: false,
                errorReason: 'invalid_exact_evm_transfer_event_mismatch',
                errorMessage:
                  'transaction 0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034 has no Transfer of 10000 from 0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e to 0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                network: 'eip155:84532',
              },
            },
            rpcDown: {
              summary: 'The chain RPC is unreachable: nothing sent, retry later',
              value: {
                success: false,
                errorReason: 'unexpected_settle_error',
                errorMessage: 'the chain could not be reached: fetch failed',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '',
                network: 'eip155:84532',
              },
            },
            uptoCharged: {
              summary: 'upto: charged the actual amount (the permit allowed up to more)',
              value: {
                success: true,
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '0x0c9a06220de825e6e7333522173977e8a8bf6f7fb0f2de63a213f8dd57c68034',
                network: 'eip155:84532',
                amount: '12345',
              },
            },
            uptoNothing: {
              summary: 'upto: nothing used, nothing charged, no transaction',
              value: { success: true, payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e', transaction: '', network: 'eip155:84532', amount: '0' },
            },
            uptoAboveMaximum: {
              summary: 'upto: the charge is above the signed maximum',
              value: {
                success: false,
                errorReason: 'invalid_upto_evm_payload_settlement_exceeds_amount',
                errorMessage: "the charge 50001 is above the permit's maximum 50000",
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                transaction: '',
                network: 'eip155:84532',
              },
            },
            payToNotAllowed: {
              summary: 'payTo is not a receiving address of the calling merchant',
              value: {
                success: false,
                errorReason: 'pay_to_not_allowed',
                errorMessage:
                  'payTo 0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc is not a receiving address this merchant declared for eip155:84532; declare it (POST /merchants/me/receiving-addresses, or scripts/merchants.mjs receiving-addresses add) or allow any payTo (allowAnyPayTo)',
                transaction: '',
                network: 'eip155:84532',
              },
            },
          },
        },
      ),
      '400': { $ref: '#/components/responses/BadRequest' },
      ...MERCHANT_KEY_ERRORS,
      '409': { $ref: '#/components/responses/PaymentIdentifierConflict' },
      ...JSON_BODY_ERRORS,
    },
    security: KEY_OR_OPEN_MODE,
  },
  supported: {
    operationId: 'supported',
    summary: 'Schemes, networks, extensions and signer addresses this facilitator serves',
    responses: {
      '200': jsonResponse(
        'What this facilitator serves.',
        { $ref: '#/components/schemas/SupportedResponse' },
        {
          examples: {
            baseSepolia: {
              summary: 'FACILITATOR_NETWORKS_FILE=docs/examples/networks.base-sepolia.json',
              value: {
                kinds: [
                  { x402Version: 2, scheme: 'exact', network: 'eip155:84532' },
                  { x402Version: 1, scheme: 'exact', network: 'base-sepolia' },
                  { x402Version: 2, scheme: 'upto', network: 'eip155:84532', extra: { facilitatorAddress: '0xD72505BC4336aF491c8EadCF6F28b1EAD73d0514' } },
                ],
                extensions: ['payment-identifier'],
                signers: { 'eip155:*': ['0xD72505BC4336aF491c8EadCF6F28b1EAD73d0514', '0x54aaf95AAb8029748B7BD986D3F0807B4Ff6Cbad'] },
              },
            },
            local: {
              summary: 'Local anvil chain (npm start)',
              value: {
                kinds: [
                  { x402Version: 2, scheme: 'exact', network: 'eip155:31337' },
                  { x402Version: 1, scheme: 'exact', network: 'anvil' },
                  { x402Version: 1, scheme: 'exact', network: 'localhost' },
                  { x402Version: 2, scheme: 'upto', network: 'eip155:31337', extra: { facilitatorAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' } },
                ],
                extensions: ['payment-identifier'],
                signers: {
                  'eip155:*': [
                    '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
                    '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
                    '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
                    '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65',
                  ],
                },
              },
            },
          },
        },
      ),
      '500': { $ref: '#/components/responses/InternalError' },
    },
  },
} satisfies Record<string, OperationDoc>;
