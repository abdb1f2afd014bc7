import { AGENT_CARD_PATH } from '@a2a-js/sdk';

/** Where the agent's A2A bindings are mounted; the card announces them under MERCHANT_PUBLIC_URL. */
export const A2A_CARD_PATH = `/${AGENT_CARD_PATH}`;
export const A2A_JSONRPC_PATH = '/a2a/jsonrpc';
export const A2A_REST_PATH = '/a2a/rest';

/**
 * The A2A routes docs/api/merchant-agent.openapi.json documents, as "METHOD /path" with `:param` placeholders: what the SDK's
 * routers serve under the paths above (mountA2a), besides the push-notification config and extended-card routes,
 * which this agent only answers with errors (the card says pushNotifications and extendedAgentCard are false).
 * HTTP+JSON: A2A 1.0 at the binding's root, and the v0.3 compat layer's routes under /v1 (A2A-Version absent or 0.3).
 */
export const A2A_DOCUMENTED_ROUTES: readonly string[] = [
  `GET ${A2A_CARD_PATH}`,
  `POST ${A2A_JSONRPC_PATH}`,
  `POST ${A2A_REST_PATH}/message:send`,
  `POST ${A2A_REST_PATH}/message:stream`,
  `GET ${A2A_REST_PATH}/tasks`,
  `GET ${A2A_REST_PATH}/tasks/:taskId`,
  `POST ${A2A_REST_PATH}/tasks/:taskId:cancel`,
  `GET ${A2A_REST_PATH}/tasks/:taskId:subscribe`,
  `POST ${A2A_REST_PATH}/tasks/:taskId:subscribe`,
  `POST ${A2A_REST_PATH}/v1/message:send`,
  `POST ${A2A_REST_PATH}/v1/message:stream`,
  `GET ${A2A_REST_PATH}/v1/tasks/:taskId`,
  `POST ${A2A_REST_PATH}/v1/tasks/:taskId:cancel`,
  `GET ${A2A_REST_PATH}/v1/tasks/:taskId:subscribe`,
  `POST ${A2A_REST_PATH}/v1/tasks/:taskId:subscribe`,
];
