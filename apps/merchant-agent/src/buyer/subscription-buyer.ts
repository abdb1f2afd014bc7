import { parseWwwAuthenticateLines, serializeCredential, signEvmSubscription, SUBSCRIPTION_INTENT, type Challenge } from '@mp/mpp';
import type { Hex, LocalAccount } from 'viem';

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
