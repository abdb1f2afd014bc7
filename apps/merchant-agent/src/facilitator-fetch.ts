import { keepAliveFetch } from '@mp/chain';

/**
 * fetch for the facilitator's and the ledger's APIs: over keep-alive node:http (keepAliveFetch, about half the CPU of
 * the global fetch per call), and each call aborts after `timeoutMs`, body included, so a service that never answers
 * holds no request of ours for longer than that.
 */
export function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return (input, init) =>
    keepAliveFetch(input, {
      ...init,
      signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
    });
}
