/**
 * fetch for the facilitator's MPP client (@mp/clients): each call aborts after `timeoutMs`, body included, so a
 * facilitator that never answers holds no request of ours for longer than that.
 */
export function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return (input, init) =>
    fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs) });
}
