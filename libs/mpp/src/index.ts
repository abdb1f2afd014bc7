export { canonicalize, JcsError } from './jcs';
export { Base64UrlError, decodeBase64Url, decodeBase64UrlText, encodeBase64Url } from './base64url';
export {
  assertSecret,
  challengeBindingInput,
  challengeFromParams,
  challengeId,
  challengeSchema,
  createChallenge,
  decodeOpaque,
  encodeOpaque,
  isBound,
  MAX_REQUEST_PARAM_LENGTH,
  MIN_SECRET_BYTES,
  PAYMENT_AUTHORIZATION_HEADER,
  parseWwwAuthenticate,
  parseWwwAuthenticateLines,
  serializeChallenge,
  serializeChallenges,
  serializeRequest,
  type Challenge,
  type ChallengeError,
  type ChallengeFields,
} from './challenge';
export { credentialWireSchema, parseCredential, serializeCredential, verifyBinding, type Credential, type VerifyBindingOptions } from './credential';
export { decodeReceipt, encodeReceipt, PAYMENT_RECEIPT_HEADER, receiptSchema, type Receipt } from './receipt';
export { fail, ok, PROBLEM_BASE, PROBLEMS, problemType, toProblemDetails, type MppError, type ProblemCode, type ProblemDetails, type Result } from './problems';
export { CHALLENGE_NONCE_KEY, matchOffer, type Offer, type Terms } from './terms';
export {
  checkEvmCharge,
  EVM_METHOD,
  evmAuthorizationPayloadSchema,
  evmChallengeNonce,
  evmChargeRequestSchema,
  evmSource,
  normalizeEvmChargeRequest,
  type EvmAuthorizationPayload,
  type EvmChargeCredential,
  type EvmChargeRequest,
} from './methods/evm-charge';
export {
  checkStripeCharge,
  sptPayloadSchema,
  STRIPE_METHOD,
  stripeAmountSchema,
  stripeChargeRequestSchema,
  stripeIdempotencyKey,
  type SptPayload,
  type StripeChargeCredential,
  type StripeChargeRequest,
} from './methods/stripe-charge';
export {
  checkStripeSubscription,
  judgeSubscriptionInvoice,
  parseStripeSubscriptionRequest,
  stripeRecurring,
  stripeSubscriptionIdempotencyKey,
  stripeSubscriptionPayloadSchema,
  stripeSubscriptionRequestSchema,
  type ExpectedInvoice,
  type InvoiceRefusal,
  type StripeInvoiceFacts,
  type StripeSubscriptionCredential,
  type StripeSubscriptionPayload,
  type StripeSubscriptionRequest,
} from './methods/stripe-subscription';
export { bodyDigest } from './digest';
export { MPP_WIRE_SCHEMAS } from './wire-schemas';
