import { ChainClock } from '@mp/chain';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { freePort } from './support/net';

/** CLOCK_RPC_URL's clock: it follows anvil's time forward after evm_increaseTime and a mined block, never backwards. */
describe('ChainClock', () => {
  it('follows the chain forward and never runs backwards', async () => {
    const anvil = await startAnvil({ port: await freePort(), chainId: 31_991 });
    const rpc = (method: string, params: unknown[] = []) =>
      fetch(anvil.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const clock = await new ChainClock(anvil.rpcUrl, 20).start();
    try {
      expect(Math.abs(clock.nowMs() - Date.now())).toBeLessThan(5_000);

      await rpc('evm_increaseTime', [86_400]);
      await rpc('evm_mine');
      await clock.refresh();
      const dayAhead = Date.now() + 86_400_000;
      expect(clock.nowMs()).toBeGreaterThan(dayAhead - 5_000);
      expect(clock.nowMs()).toBeLessThan(dayAhead + 5_000);

      // with no new block the latest one falls behind the wall clock: the clock keeps the offset it had
      await new Promise((r) => setTimeout(r, 1_200));
      const before = clock.nowMs();
      await clock.refresh();
      expect(clock.nowMs()).toBeGreaterThanOrEqual(before);
    } finally {
      clock.stop();
      await anvil.stop();
    }
  });
});
