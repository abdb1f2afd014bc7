import { LIVENESS_DOC, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about HealthController's routes (see @ApiDoc). */
export const HEALTH_DOCS = { health: LIVENESS_DOC } satisfies Record<string, OperationDoc>;
