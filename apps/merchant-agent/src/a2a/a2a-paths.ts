import { AGENT_CARD_PATH } from '@a2a-js/sdk';

/** Where the agent's A2A bindings are mounted; the card announces them under MERCHANT_PUBLIC_URL. */
export const A2A_CARD_PATH = `/${AGENT_CARD_PATH}`;
export const A2A_JSONRPC_PATH = '/a2a/jsonrpc';
export const A2A_REST_PATH = '/a2a/rest';
