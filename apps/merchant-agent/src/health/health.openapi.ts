import { jsonResponse, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about HealthController's routes (see @ApiDoc). */
export const HEALTH_DOCS = {
  health: {
    operationId: 'health',
    summary: 'Liveness (all three services)',
    description:
      'Answers 200 `{"status":"ok"}` as long as the process runs and serves HTTP. It checks no dependency: a database, Redis, RPC or facilitator outage does not make it fail (see `GET /ready`), so an orchestrator restarting on a failed liveness probe never restarts healthy replicas because of an outage elsewhere.',
    responses: {
      '200': jsonResponse('The process is alive.', { $ref: '#/components/schemas/HealthResponse' }, { example: { status: 'ok' } }),
    },
  },
} satisfies Record<string, OperationDoc>;
