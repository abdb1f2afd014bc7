import { OPENAPI_CONVENTIONS, zodComponentSchemas, type OpenApiOptions } from '@mp/platform';
import { MPP_WIRE_SCHEMAS, PROBLEM_BASE, PROBLEMS } from '@mp/mpp';
import { X402_WIRE_SCHEMAS, X402Reason } from '@mp/x402';
import { MPP_API_SCHEMAS } from './mpp/mpp.api';
import { SESSION_API_SCHEMAS } from './sessions/sessions.api';
import { COMPONENTS, WEBHOOKS } from './openapi.components';

/** The Payment scheme's problem types the facilitator answers (session/* for the evm session intent). */
const MPP_PROBLEM_TYPES = Object.keys(PROBLEMS) as (keyof typeof PROBLEMS)[];
/** What the facilitator says about itself in its OpenAPI document; its routes say the rest (see @ApiDoc). */
export const FACILITATOR_OPENAPI: OpenApiOptions = {
  title: 'Facilitator',
  version: '0.1.0',
  description: `${'The facilitator: x402 verify and settle of `exact` EVM (EIP-3009) payments, and MPP (the `Payment` HTTP authentication scheme) challenges, verify and settle with the `evm` and `stripe` charge methods, exactly once, and `evm` sessions (payment channels paid with vouchers).'}\n\n${OPENAPI_CONVENTIONS}`,
  components: {
    ...COMPONENTS,
    schemas: {
      ...COMPONENTS.schemas,
      // the lists the code has, whatever the descriptions say
      X402Reason: { ...COMPONENTS.schemas.X402Reason, enum: Object.values(X402Reason) },
      MppProblemType: {
        ...COMPONENTS.schemas.MppProblemType,
        enum: MPP_PROBLEM_TYPES.map((t) => `${PROBLEM_BASE}${t}`),
        'x-problem-status': Object.fromEntries(MPP_PROBLEM_TYPES.map((t) => [t, PROBLEMS[t].status])),
      },
      ...zodComponentSchemas({ ...X402_WIRE_SCHEMAS, ...MPP_WIRE_SCHEMAS, ...MPP_API_SCHEMAS, ...SESSION_API_SCHEMAS }),
    },
  },
  webhooks: WEBHOOKS,
};
