import { jsonResponse, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about DiscoveryController's routes (see @ApiDoc). */
export const DISCOVERY_DOCS = {
  document: {
    operationId: 'getDiscoveryDocument',
    summary: 'Payment discovery document (draft-payment-discovery)',
    description:
      "OpenAPI 3.1 with `x-service-info` at the root and `x-payment-info.offers` on each MPP-paid operation; `Cache-Control: max-age=300`. Advisory: the 402's challenges are what a client pays. Validated in the tests with mppx/discovery.",
    responses: {
      '200': jsonResponse('The document.', { type: 'object' }, { headers: { 'Cache-Control': { schema: { type: 'string', const: 'max-age=300' } } } }),
    },
  },
} satisfies Record<string, OperationDoc>;
