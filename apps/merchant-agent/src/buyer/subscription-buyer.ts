import { accessMessage, statusMessage } from '@mp/chain';
import { parseWwwAuthenticateLines, serializeCredential, signEvmSubscription, SUBSCRIPTION_INTENT, type Challenge } from '@mp/mpp';
import type { Hex, LocalAccount } from 'viem';

/** How long a buyer's proof stays good by default: well inside the 600 s the merchant accepts. */
const PROOF_LIFETIME_S = 120;

/**
 * A subscriber's proof that it is the payer (EIP-191 over @mp/chain accessMessage), for `resource`: the route
 * (`GET /mpp/briefing`) or the A2A skill (`a2a:forecast`). As the A2A `mpp.subscription.proof` metadata object.
 */
export async function subscriberProof(
  account: Pick<LocalAccount, 'address' | 'signMessage'>,
  product: string,
  resource: string,
  deadline = String(Math.floor(Date.now() / 1000) + PROOF_LIFETIME_S),
): Promise<{ payer: string; deadline: string; signature: string }> {
  const signature = await account.signMessage({ message: accessMessage(product, resource, deadline) });
  return { payer: account.address, deadline, signature };
}

/** The same proof as the `Payer-Proof` header of an HTTP request. */
export async function payerProofHeaderValue(
  account: Pick<LocalAccount, 'address' | 'signMessage'>,
  product: string,
  resource: string,
  deadline?: string,
): Promise<string> {
  const proof = await subscriberProof(account, product, resource, deadline);
  return `payer="${proof.payer}", deadline="${proof.deadline}", signature="${proof.signature}"`;
}

/** The subscription challenge among a 402's WWW-Authenticate fields (one per value), for the evm method. */
export function evmSubscriptionChallenge(wwwAuthenticate: string[]): Challenge {
  const parsed = parseWwwAuthenticateLines(wwwAuthenticate);
  if (!parsed.ok) throw new Error(`unreadable WWW-Authenticate: ${parsed.error.detail}`);
  const challenge = parsed.value.find((c) => c.method === 'evm' && c.intent === SUBSCRIPTION_INTENT);
  if (!challenge) throw new Error('no evm subscription challenge was offered');
  return challenge;
}

/**
 * The buyer's answer to an evm subscription challenge: one signed EIP-3009 authorization per period of the grant
 * (@mp/mpp signEvmSubscription), as the `Payment …` credential the merchant settles.
 */
export async function subscribeCredential(challenge: Challenge, account: LocalAccount, options: { anchorSeconds?: bigint } = {}): Promise<string> {
  const payload = await signEvmSubscription(challenge, {
    from: account.address,
    signTypedData: (typed) => account.signTypedData(typed as never) as Promise<Hex>,
    ...(options.anchorSeconds !== undefined && { anchorSeconds: options.anchorSeconds }),
  });
  const chainId = (challenge.request.methodDetails as { chainId: number }).chainId;
  return serializeCredential({ challenge, payload, source: `did:pkh:eip155:${chainId}:${account.address}` });
}

/** The arguments of the `subscription_status` MCP tool: the payer's signature over @mp/chain statusMessage. */
export async function subscriptionStatusArgs(
  account: Pick<LocalAccount, 'signMessage'>,
  subscriptionId: string,
  deadline = String(Math.floor(Date.now() / 1000) + PROOF_LIFETIME_S),
): Promise<{ subscriptionId: string; deadline: string; signature: string }> {
  return { subscriptionId, deadline, signature: await account.signMessage({ message: statusMessage(subscriptionId, deadline) }) };
}
