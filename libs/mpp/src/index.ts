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
  stripeChargeRequestSchema,
  stripeIdempotencyKey,
  type SptPayload,
  type StripeChargeCredential,
  type StripeChargeRequest,
} from './methods/stripe-charge';
export { bodyDigest } from './digest';
export { MPP_WIRE_SCHEMAS } from './wire-schemas';
export {
  checkEvmSubscription,
  EVM_SUBSCRIPTION_CREDENTIAL_TYPE,
  evmPeriodAuthorizationSchema,
  evmSubscriptionNonce,
  evmSubscriptionPayloadSchema,
  evmSubscriptionReceipt,
  evmSubscriptionRequestProblems,
  evmSubscriptionRequestSchema,
  MAX_SUBSCRIPTION_AUTHORIZATIONS,
  MAX_SUBSCRIPTION_CREDENTIAL_CHARS,
  normalizeEvmSubscriptionRequest,
  signEvmSubscription,
  SUBSCRIPTION_ID_PATTERN,
  SUBSCRIPTION_INTENT,
  subscriptionPeriod,
  subscriptionWindows,
  transferWithAuthorizationTypedData,
  type CheckedPeriodAuthorization,
  type EvmPeriodAuthorization,
  type EvmSubscriptionCredential,
  type EvmSubscriptionPayload,
  type EvmSubscriptionRequest,
  type PeriodWindow,
  type SignTypedData,
  type SubscriptionCheckOptions,
} from './methods/evm-subscription';
