// The demo's subscriptions (issue 13): a plan in the ledger, buyers subscribing over MPP, renewals by moving the
// chain's clock (facilitator and ledger follow it through CLOCK_RPC_URL), a cancel at period end, an immediate cancel
// with its refund, and the books. Used by scripts/demo.mjs.

const DAY = 86_400;

/** JSON over HTTP with the merchant's key; a non-2xx answer throws with its problem. */
export function merchantApi(baseUrl, apiKey) {
  return async (path, body) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${body === undefined ? 'GET' : 'POST'} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
}

/** Moves anvil's clock forward and mines a block at the new time; the services see it within a refresh (250 ms). */
export async function advanceChain(rpcUrl, seconds) {
  for (const [method, params] of [
    ['evm_increaseTime', [seconds]],
    ['evm_mine', []],
  ]) {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = await response.json();
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
  }
  await new Promise((r) => setTimeout(r, 600));
}

/** Polls until probe returns a value (not undefined), or throws naming what it waited for. */
export async function until(what, probe, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export { DAY };

/** The demo plans, bound into the challenges: daily, and an immediate cancel refunds the unused part of the period. */
export function demoPlans(manifest) {
  const common = { periodUnit: 'day', periodCount: 1, cancelRefund: 'unused_part' };
  return {
    evm: {
      ...common,
      id: 'f0f0f0f0-0000-4000-8000-00000000e0e0',
      name: 'Daily briefing',
      product: 'briefing',
      amount: '50000',
      asset: `${manifest.network}/${manifest.tokens.usdc.address.toLowerCase()}`,
    },
    stripe: {
      ...common,
      id: 'f0f0f0f0-0000-4000-8000-00000000a7a7',
      name: 'Daily briefing (card)',
      product: 'briefing-card',
      amount: '500',
      asset: 'stripe/usd',
    },
  };
}

/** A subscription as the ledger shows it, in one line. */
export function describeSubscription(s) {
  const paid = s.charges.filter((c) => c.state === 'paid').map((c) => c.periodIndex);
  const refund = s.cancel?.refund ? `, refund ${s.cancel.refund.amount} ${s.cancel.refund.state}` : '';
  const cancel = s.cancel ? `, cancel ${s.cancel.at}${s.cancel.confirmedAt ? ' confirmed' : ''}` : '';
  return `${s.id} (${s.method}, ${s.product}): ${s.state}, periods paid [${paid.join(', ')}]${cancel}${refund}`;
}
