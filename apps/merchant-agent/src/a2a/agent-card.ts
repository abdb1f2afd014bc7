import { AgentCard } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import type { MerchantConfig } from '../merchant.config';
import { A2A_JSONRPC_PATH, A2A_REST_PATH } from './a2a-paths';
import type { Skill } from './skills';
import { X402_EXTENSION_URIS } from './x402/extension';

/**
 * The agent's card: JSON-RPC and HTTP+JSON bindings, each in A2A 1.0 and (through the SDK's compat layer) 0.3;
 * streaming; the x402 extension under both of its URIs, not required by the card (the SDK would then demand both)
 * but by every paid skill, with the prices in its params.
 */
export function agentCard(config: MerchantConfig, skills: ReadonlyMap<string, Skill>): AgentCard {
  const paid = [...skills.values()].filter((skill) => skill.paid);
  const x402Params = {
    x402Version: 2,
    prices: Object.fromEntries(
      paid.map((skill) => [
        skill.id,
        {
          scheme: 'exact',
          network: config.price.network,
          asset: config.price.asset,
          amount: skill.paid?.amount,
          payTo: config.price.payTo,
          settle: skill.paid?.settleTiming,
        },
      ]),
    ),
  };
  const x402 = (uri: string, version: string) => ({
    uri,
    description: `x402 payments (a2a-x402 ${version}): paid skills answer with an input-required task carrying x402.payment.required.`,
    required: false,
    params: x402Params,
  });
  return AgentCard.fromJSON({
    name: 'machine-payments merchant agent',
    description:
      'Sells small machine services to other agents, paid on chain with x402 through A2A tasks (a2a-x402): a paid skill waits in input-required for a signed payment, then settles it through the merchant\'s facilitator. Name a skill by metadata.skillId, by a data part {"skillId": …, "input": …}, or in the text (its id or name; the input after "on:"); a message naming none is answered input-required with the skills and their prices.',
    version: '0.1.0',
    provider: { organization: 'machine-payments', url: config.publicUrl },
    supportedInterfaces: duplicateInterfacesForLegacy(
      [
        { url: `${config.publicUrl}${A2A_JSONRPC_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: `${config.publicUrl}${A2A_REST_PATH}`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      ['JSONRPC', 'HTTP+JSON'],
    ),
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [x402(X402_EXTENSION_URIS.v02, 'v0.2'), x402(X402_EXTENSION_URIS.v01, 'v0.1')],
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: [...skills.values()].map((skill) => ({ id: skill.id, ...skill.card, inputModes: ['text/plain', 'application/json'] })),
  });
}
